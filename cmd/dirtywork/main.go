// Command dirtywork hands coding tasks to local language models and keeps
// their work isolated for review. See the README for an overview.
package main

import "os"

func main() {
	os.Exit(Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
