package tui

import "github.com/charmbracelet/x/ansi"

func plain(s string) string { return ansi.Strip(s) }
