// Package bench sweeps tasks over fixture repositories, scores every run in
// an acceptance container and summarizes and compares the results.
package bench
