# zsh -f zsh-complete.zsh DIR LINE
#
# What zsh really offers for LINE: an interactive zsh in a pseudo-terminal
# (zsh/zpty) loads the completion system with DIR first in fpath, LINE is
# typed and then TAB, and every match the completion functions add (through
# compadd) is printed, one per line. Exits 3 if completion did not finish in
# 20 seconds.
zmodload zsh/zpty || exit 2
dir=$1 line=$2
out=$(mktemp) || exit 2
trap 'rm -f $out; zpty -d z 2>/dev/null' EXIT

zpty z zsh -f -i
zpty -w z "PS1='' PS2='' RPS1=''; unsetopt zle_bracketed_paste auto_list auto_menu list_ambiguous; setopt no_beep"
zpty -w z "fpath=(${(q)dir} \$fpath); autoload -Uz compinit; compinit -u -D"
# The capture: each match added goes to the file too. A call that asks
# compadd for matches only (-O, -A, -D) adds nothing and is passed through.
zpty -w z "compadd() { if [[ \${@[(I)-[OAD]*]} -gt 0 ]]; then builtin compadd \"\$@\"; return; fi; local -a m; builtin compadd -O m \"\$@\"; (( \$#m )) && print -rl -- \$m >> ${(q)out}; builtin compadd \"\$@\"; }"
zpty -w z "_capture_done() { print -r -- '<completion finished>' >> ${(q)out}; }; comppostfuncs=(_capture_done)"
zpty -w z "bindkey '^I' complete-word"
# The line, TAB, then clear the line (nothing is ever run).
zpty -w -n z "$line"$'\t'
for i in {1..200}; do
    if grep -qx '<completion finished>' $out 2>/dev/null; then
        grep -vx '<completion finished>' $out
        exit 0
    fi
    sleep 0.1
done
exit 3
