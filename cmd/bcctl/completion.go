package main

import (
	"context"
	"fmt"
	"io"
	"strings"
)

// completion prints a shell completion script for bcctl's commands and verbs, made from groups()
// so it never lists a command the binary lacks: `source <(bcctl completion bash)`.
func completion(_ context.Context, c *cli, args []string) error {
	fs := c.flags("completion", `bcctl completion bash

Prints a bash completion script for bcctl's commands and verbs. Load it with
  source <(bcctl completion bash)
or save it as /etc/bash_completion.d/bcctl.`)
	rest, err := c.parse(fs, args, false)
	if err != nil {
		return err
	}
	if len(rest) != 1 || rest[0] != "bash" {
		return usagef("completion: give the shell: bcctl completion bash")
	}
	writeBashCompletion(c.env.Stdout)
	return nil
}

func writeBashCompletion(w io.Writer) {
	var names []string
	var cases strings.Builder
	for _, g := range groups() {
		names = append(names, g.name)
		if len(g.verbs) == 0 {
			continue
		}
		var verbs []string
		for _, v := range g.verbs {
			verbs = append(verbs, v.name)
		}
		fmt.Fprintf(&cases, "    %s) COMPREPLY=($(compgen -W %q -- \"$cur\")) ;;\n",
			strings.Join(append([]string{g.name}, g.aliases...), "|"), strings.Join(verbs, " "))
	}
	fmt.Fprintf(w, `# bash completion for bcctl (bcctl completion bash)
_bcctl() {
  local cur=${COMP_WORDS[COMP_CWORD]}
  if [ "$COMP_CWORD" -eq 1 ]; then
    COMPREPLY=($(compgen -W %q -- "$cur"))
    return
  fi
  [ "$COMP_CWORD" -eq 2 ] || return
  case ${COMP_WORDS[1]} in
%s  esac
}
complete -F _bcctl bcctl
`, strings.Join(append(names, "help"), " "), cases.String())
}
