#!/bin/bash
# readme_example.sh SOURCE_DIR TOOL - run the README's Python-kernel example as written (the block
# after "<!-- readme-example: python -->"), in a scratch directory holding what it reads, and check
# what the README says of it: --emit-plan names the plan the next line runs, that run measures the
# module, and --record refuses it into the card (which names another candidate), leaving the card as
# it was. Issue 35: the example once ran the card's own plan and recorded the card's own pair.
set -u
src=$1 tool=$2
block=$(awk '/<!-- readme-example: python -->/{f=1; next} f && /^```sh/{g=1; next} g && /^```/{exit} g' "$src/README.md")
[ -n "$block" ] || { echo "FAIL: no '<!-- readme-example: python -->' block in README.md"; exit 1; }
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/skills" "$scratch/kernels/python" "$scratch/build"
cp "$src/skills/mla_decode_cpu_splitkv.md" "$scratch/skills/"
cp "$src"/kernels/python/*.py "$scratch/kernels/python/"
ln -s "$tool" "$scratch/build/validate_skill"
cd "$scratch" || exit 1
before=$(sha256sum skills/mla_decode_cpu_splitkv.md)
fail=0 n=0 wrote=""
while IFS= read -r line; do
	cmd=${line%%#*}
	[ -n "${cmd// /}" ] || continue
	n=$((n + 1))
	case $cmd in
	export\ *) eval "$cmd"; rc=$? out="" ;; # in this shell: the lines after it see it
	*) out=$(eval "$cmd" 2>&1); rc=$? ;;
	esac
	echo "\$ $cmd  -> exit $rc"
	case $n in
	1) ;; # export
	2) wrote=$(printf '%s\n' "$out" | sed -n 's/^wrote //p')
	   [ $rc -eq 0 ] && [ -n "$wrote" ] || { echo "FAIL: --emit-plan: exit $rc, no 'wrote' line: $out"; fail=1; } ;;
	3) case " $cmd " in *" $wrote "*) ;; *) echo "FAIL: the example runs '$cmd', --emit-plan wrote '$wrote'"; fail=1 ;; esac
	   [ $rc -le 1 ] || { echo "FAIL: --run exit $rc: $out"; fail=1; }
	   eval_dir=$(printf '%s\n' "$out" | sed -n 's/^eval dir: //p')
	   grep -q '"candidate":[[:space:]]*"numpy.mla_decode"' "$eval_dir/result.json" 2>/dev/null ||
		{ echo "FAIL: the run did not measure numpy.mla_decode ($eval_dir)"; fail=1; } ;;
	4) [ $rc -eq 3 ] && printf '%s\n' "$out" | grep -q "cannot speak for this card" ||
		{ echo "FAIL: --record: exit $rc (want 3, refused): $out"; fail=1; } ;;
	esac
done <<<"$block"
[ $n -eq 4 ] || { echo "FAIL: the block has $n commands, this test knows 4: update it with the README"; fail=1; }
[ "$before" = "$(sha256sum skills/mla_decode_cpu_splitkv.md)" ] || { echo "FAIL: the card changed"; fail=1; }
[ $fail -eq 0 ] && echo "readme_example: the README's Python example runs as written"
exit $fail
