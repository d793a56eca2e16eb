#!/usr/bin/env bash
# A short anvil-bench compare on loopback: two fake vLLM members (tiny profile) directly, and the
# same members behind anvil-router (capacity tier), with the same schedule and prompts. Writes the
# table, JSON, Markdown, raw records and CDF plots under bench/results/ (git-ignored).
#
#   bench/demo-compare.sh [extra anvil-bench compare flags]
#
# It builds the binaries into a temporary directory, and stops everything it started on exit.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
out=${BENCH_RESULTS:-$root/bench/results}
mkdir -p "$out"
work=$(mktemp -d)
pids=()
cleanup() {
	for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
	for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
	rm -rf "$work"
}
trap cleanup EXIT

(cd "$root" && go build -o "$work/" ./cmd/anvil-fakevllm ./cmd/anvil-router ./cmd/anvil-bench)

model=demo/llama-3.1-8b
"$work/anvil-fakevllm" serve --members 2 --model "$model" --profile tiny >"$work/members.out" 2>"$work/members.err" &
pids+=($!)
for _ in $(seq 100); do
	[ "$(grep -c '^member ' "$work/members.out" || true)" = 2 ] && break
	sleep 0.1
done
mapfile -t members < <(awk '/^member /{print $3}' "$work/members.out")
[ "${#members[@]}" = 2 ] || { echo "demo-compare: the fake members did not start" >&2; cat "$work/members.err" >&2; exit 1; }

token=demo-compare-caller-token
printf '%s\n' "$token" >"$work/token"
cat >"$work/router.yaml" <<EOF
listen: 127.0.0.1:0
auth:
  caller_tokens_file: $work/token
decision_log:
  ring_size: 100000
aliases:
  - id: chat
    tier: pool
tiers:
  - id: pool
    kind: replica
    served_model: $model
    host: 127.0.0.1
    provenance: anvil-fakevllm tiny profile (bench/demo-compare.sh)
    replica_strategy: capacity
    gates:
      max_context_tokens: 1024
    members:
      - {id: vllm-0, endpoint: "${members[0]}", max_concurrency: 8}
      - {id: vllm-1, endpoint: "${members[1]}", max_concurrency: 8}
EOF
"$work/anvil-router" serve --config "$work/router.yaml" >"$work/router.out" 2>"$work/router.err" &
pids+=($!)
addr=
for _ in $(seq 100); do
	addr=$(sed -n 's/.*msg=serving addr=\([^ ]*\).*/\1/p' "$work/router.err" | head -n1)
	[ -n "$addr" ] && break
	sleep 0.1
done
[ -n "$addr" ] || { echo "demo-compare: the router did not start" >&2; cat "$work/router.err" >&2; exit 1; }

"$work/anvil-bench" compare \
	--member "${members[0]}" --member "${members[1]}" --direct-model "$model" \
	--url "http://$addr" --model chat --token-file "$work/token" \
	--clients 16 --requests 400 --warmup 32 \
	--prompt-tokens uniform:min=16,max=512 --output-tokens uniform:min=8,max=128 --streaming 0.8 \
	--label demo-compare --no-progress \
	--json "$out/demo-compare.json" --markdown "$out/demo-compare.md" --raw "$out/demo-compare.jsonl" --plots "$out" \
	"$@" | tee "$out/demo-compare.txt"
