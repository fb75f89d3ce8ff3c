// Package conffile reads aerospike.conf the way the Aerospike server (asd) does and holds it to the
// server's parameter tables: Parse reads the blocks and lines, Check reports what asd refuses when it
// starts (with asd's messages and line numbers), and Settings maps every line to the tables' parameters
// with its value in the server's units, for comparing a file with what a running server reports.
//
// The syntax is asd's (as/src/base/cfg.c): a line is whitespace-separated tokens, a '#' starts a
// comment, a line ending in '{' opens a block named by the tokens before it ("namespace test {"), and a
// line holding only '}' closes it; any other line is a parameter name followed by its value tokens.
// Everything here is pure: text and tables in, results out.
package conffile

import (
	"fmt"
	"strings"
)

// maxLineSize is asd's line buffer (MAX_LINE_SIZE): it reads at most 1023 characters of a line.
const maxLineSize = 1024

// Node is a line of the file: a parameter, or a block with the nodes inside it.
type Node struct {
	// Line is the 1-based line number.
	Line int
	// Name is the first token ("proto-fd-max", "namespace", "storage-engine").
	Name string
	// Args are the other tokens; for a block, those between the name and '{' ("test" in
	// "namespace test {").
	Args []string
	// Block marks a node that opened a block; Children are its nodes in file order.
	Block    bool
	Children []*Node
	// End is the line of the block's closing '}'.
	End int
}

// Header is the node as its block opens or its line reads: the name and its arguments.
func (n *Node) Header() string { return strings.Join(append([]string{n.Name}, n.Args...), " ") }

// Value is the node's value tokens joined by one space ("host 3002" for a mesh seed).
func (n *Node) Value() string { return strings.Join(n.Args, " ") }

// File is a parsed aerospike.conf: its top-level nodes in order.
type File struct {
	Nodes []*Node
}

// SyntaxError is a file asd cannot parse into blocks.
type SyntaxError struct {
	Line int
	Msg  string
}

func (e *SyntaxError) Error() string {
	if e.Line == 0 {
		return e.Msg
	}
	return fmt.Sprintf("line %d :: %s", e.Line, e.Msg)
}

// Parse reads the blocks and lines of an aerospike.conf. It checks the syntax only; Check holds the
// result to the parameter tables.
func Parse(text string) (*File, error) {
	f := &File{}
	var stack []*Node // the open blocks
	add := func(n *Node) {
		if len(stack) == 0 {
			f.Nodes = append(f.Nodes, n)
			return
		}
		top := stack[len(stack)-1]
		top.Children = append(top.Children, n)
	}
	num := 0
	for line := range strings.Lines(text) {
		num++
		if len(strings.TrimRight(line, "\r\n")) >= maxLineSize {
			return nil, &SyntaxError{num, fmt.Sprintf("line longer than %d characters", maxLineSize-1)}
		}
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		tokens := strings.FieldsFunc(line, isSpace)
		switch {
		case len(tokens) == 0:
		case len(tokens) == 1 && tokens[0] == "}":
			if len(stack) == 0 {
				return nil, &SyntaxError{num, "'}' closes no block"}
			}
			stack[len(stack)-1].End = num
			stack = stack[:len(stack)-1]
		case tokens[len(tokens)-1] == "{":
			if len(tokens) == 1 {
				return nil, &SyntaxError{num, "'{' opens a block without a name"}
			}
			n := &Node{Line: num, Name: tokens[0], Args: tokens[1 : len(tokens)-1], Block: true}
			if err := plainTokens(num, n.Name, n.Args); err != nil {
				return nil, err
			}
			add(n)
			stack = append(stack, n)
		default:
			if err := plainTokens(num, tokens[0], tokens[1:]); err != nil {
				return nil, err
			}
			add(&Node{Line: num, Name: tokens[0], Args: tokens[1:]})
		}
	}
	if len(stack) > 0 {
		return nil, &SyntaxError{stack[len(stack)-1].Line, fmt.Sprintf(
			"block '%s' is not closed: parsing - final context missing '}'?", stack[len(stack)-1].Header())}
	}
	return f, nil
}

// plainTokens refuses braces anywhere but at the end of a block's line or alone on a closing line:
// asd would read them as names or values and lose track of its blocks.
func plainTokens(line int, name string, args []string) error {
	for _, t := range append([]string{name}, args...) {
		if strings.ContainsAny(t, "{}") {
			return &SyntaxError{line, fmt.Sprintf("'%s': a block opens with '{' at the end of its line "+
				"and closes with '}' on a line of its own", t)}
		}
	}
	return nil
}

// isSpace is asd's token delimiter set (CFG_WHITESPACE).
func isSpace(r rune) bool { return strings.ContainsRune(" \t\n\r\f\v", r) }
