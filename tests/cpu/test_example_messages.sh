#!/bin/sh
# The examples' error lines say a thing once (issue 58 item 11: d57500e printed "ft_lookup: no CUDA
# device: no CUDA device: ..."). On a machine with a GPU the lookup finds nothing tuned instead:
# the line then names that, once. Usage: test_example_messages.sh FUSEDTUNE_CLI SCRATCH EXAMPLE...
set -u
cli=$1 work=$2/example_messages_$$
shift 2
rm -rf "$work" && mkdir -p "$work" || exit 1
"$cli" --db "$work/e.db" init >/dev/null || exit 1
fail=0
for ex in "$@"; do
  out=$(FUSEDTUNE_DB="$work/e.db" "$ex" 2>&1)
  line=$(echo "$out" | grep '^ft_lookup: ')
  for phrase in "no CUDA device" "nothing tuned" "not found"; do
    n=$(echo "$line" | grep -o "$phrase" | wc -l)
    if [ "$n" -gt 1 ]; then echo "$(basename "$ex") says '$phrase' $n times: $line"; fail=1; fi
  done
  [ -n "$line" ] || { echo "$(basename "$ex") printed no ft_lookup line: $out"; fail=1; }
done
[ $fail -eq 0 ] && rm -rf "$work"
exit $fail
