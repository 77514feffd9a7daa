#!/usr/bin/env bash
# Coverage-guided fuzzing of neuroburst's entry points (tests/fuzz/targets.rs): libFuzzer through
# cargo-fuzz on the stable toolchain (`--sanitizer none`: coverage without a sanitizer; overflow
# checks and debug assertions on). Builds the targets, then runs each for FUZZ_SECONDS (default
# 45) from a corpus seeded with the repository's genomes, bags and checkpoints, and prints each
# target's executions. A crash fails the run: its input is copied to
# tests/fuzz/regressions/<target>/, where the regular tests (tests/fuzz_regressions.rs) run it
# once the bug is fixed. Arguments: the targets to run (default: all).
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
seconds=${FUZZ_SECONDS:-45}
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(ros_messages encoders cluster_inbox genome_yaml genome_feagi checkpoint bag)
fuzz() { cargo fuzz "$1" --fuzz-dir tests/fuzz --sanitizer none -O --codegen-units 16 "${@:2}"; }

if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "tests/fuzz/run.sh: installing cargo-fuzz (crates.io)" >&2
  cargo install cargo-fuzz --version 0.13.2 --locked >&2
fi
fuzz build >&2
bin=$root/tests/fuzz/target/$(rustc -vV | sed -n 's/^host: //p')/release

# Seeds: what the repository holds of each input kind.
corpus=$root/target/fuzz-corpus
mkdir -p "$corpus"
seed() {
  local t=$1; shift
  mkdir -p "$corpus/$t"
  for f in "$@"; do cp "$f" "$corpus/$t/$(echo "$f" | tr / _)"; done
}
seed genome_yaml examples/genomes/*.yaml examples/*/genome.yaml tests/fixtures/learning.yaml
seed genome_feagi tests/fixtures/feagi/*.json tests/fixtures/feagi/v3/*.json
# a bag target's first byte picks its storage: 0 .mcap, 1 .db3, 2 a directory's metadata.yaml
for f in examples/*/input.mcap; do mkdir -p "$corpus/bag"; { printf '\0'; head -c 65536 "$f"; } > "$corpus/bag/$(echo "$f" | tr / _)"; done
mkdir -p "$corpus/ros_messages" "$corpus/encoders" "$corpus/cluster_inbox" "$corpus/checkpoint"

failed=()
for t in "${targets[@]}"; do
  log=$root/target/fuzz-$t.log
  mkdir -p "tests/fuzz/artifacts/$t"
  if "$bin/$t" "$corpus/$t" -artifact_prefix="tests/fuzz/artifacts/$t/" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 \
    -print_final_stats=1 >"$log" 2>&1; then
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*$' || echo "?")
    echo "tests/fuzz/run.sh: $t: $runs executions in ${seconds} s, $cov coverage points, no crash"
  else
    artifact=$(grep -o "tests/fuzz/artifacts/$t/[a-z]*-[0-9a-f]*" "$log" | head -1 || true)
    if [ -n "$artifact" ]; then
      mkdir -p "tests/fuzz/regressions/$t"
      cp "$artifact" "tests/fuzz/regressions/$t/"
    fi
    grep -E "panicked at|ERROR: libFuzzer|SUMMARY" "$log" | head -5 >&2 || true
    echo "tests/fuzz/run.sh: $t: FOUND A BUG (log: $log; input copied to tests/fuzz/regressions/$t/: fix it, keep the input)" >&2
    failed+=("$t")
  fi
done
[ ${#failed[@]} -eq 0 ] || { echo "tests/fuzz/run.sh: bugs found by: ${failed[*]}" >&2; exit 1; }
