package aerospike

import (
	"slices"
	"strings"
)

// parseResponse splits an answer body ("cmd\tvalue\n" per command, as asd writes it) into a map
// keyed by command. Unlike the v7 client it fails instead of dropping what it cannot read, and
// checks that the body answers exactly the commands asked, so garbage cannot pass as an answer.
func parseResponse(body []byte, commands []string) (map[string]string, error) {
	text, ok := strings.CutSuffix(string(body), "\n")
	if !ok {
		return nil, badResponse("answer does not end with a newline: %q", clip(string(body)))
	}
	answers := make(map[string]string, len(commands))
	for line := range strings.SplitSeq(text, "\n") {
		// A tab-less line is an empty value, as the v7 client reads it.
		cmd, value, _ := strings.Cut(line, "\t")
		if _, dup := answers[cmd]; dup || !slices.Contains(commands, cmd) {
			return nil, badResponse("unexpected answer line %q", clip(line))
		}
		answers[cmd] = value
	}
	if len(answers) != len(commands) {
		return nil, badResponse("%d answers for %d commands", len(answers), len(commands))
	}
	return answers, nil
}

// ParseKV parses the "k=v;k=v" lists of statistics, namespace/<ns> and get-config answers.
// Items without "=" map to "".
func ParseKV(s string) map[string]string {
	out := make(map[string]string)
	if s == "" {
		return out
	}
	for item := range strings.SplitSeq(s, ";") {
		k, v, _ := strings.Cut(item, "=")
		out[k] = v
	}
	return out
}
