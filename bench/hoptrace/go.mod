// A module of its own: a diagnostic client built by run.sh, not part of github.com/anvil-llm/anvil.
module hoptrace

go 1.24
