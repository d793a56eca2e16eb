package main

import (
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/anvil-llm/anvil/internal/cli"
	"github.com/anvil-llm/anvil/scenarios"
	"github.com/anvil-llm/anvil/sim"
	"github.com/anvil-llm/anvil/sim/report"
)

// loadScenario reads arg as a scenario file when such a file exists, else as the name of an
// embedded scenario ("twenty-concurrent" or "twenty-concurrent.yaml"), changed by o as if its
// document said so (a shorter duration, for a run against real time).
func loadScenario(arg string, o scenarios.Override) (*scenarios.Scenario, error) {
	if info, err := os.Stat(arg); err == nil && info.Mode().IsRegular() {
		return loadFile(arg, o)
	}
	name := strings.TrimSuffix(filepath.Base(arg), ".yaml")
	data, err := scenarios.Source(name)
	if err != nil {
		return nil, cli.Usagef("%s is neither a scenario file nor an embedded scenario: %w", arg, err)
	}
	sc, err := scenarios.ParseOverride(data, o)
	if err != nil {
		return nil, cli.Usagef("embedded %s.yaml: %w", name, err)
	}
	return sc, nil
}

func loadFile(path string, o scenarios.Override) (*scenarios.Scenario, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, cli.UsageError{Err: err}
	}
	defer f.Close()
	data, err := cli.ReadAtMost(f, scenarios.MaxBytes)
	if errors.Is(err, cli.ErrTooLarge) {
		return nil, cli.Usagef("%s: larger than %d bytes", path, scenarios.MaxBytes)
	}
	if err != nil {
		return nil, cli.Usagef("read %s: %w", path, err)
	}
	sc, err := scenarios.ParseOverride(data, o)
	if err != nil {
		return nil, cli.Usagef("%s: %w", path, err)
	}
	return sc, nil
}

// scenarioFiles lists dir's *.yaml files, sorted.
func scenarioFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, cli.UsageError{Err: err}
	}
	var out []string
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".yaml") {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	sort.Strings(out)
	if len(out) == 0 {
		return nil, cli.Usagef("%s holds no *.yaml scenario", dir)
	}
	return out, nil
}

// checkScenario refuses, as a usage error naming where the scenario came from, anything that would
// only fail once runs are under way: a gate naming no report metric, or a tier the real router
// config (or admission, the pressure core, the engines) refuses under one of the strategies to run,
// such as a capacity run of members without ceilings.
func checkScenario(where string, sc *scenarios.Scenario, strategies []string) error {
	if err := report.CheckGates(sc); err != nil {
		return cli.Usagef("%s: %w", where, err)
	}
	for _, st := range strategies {
		if err := sim.Check(sc, st); err != nil {
			return cli.Usagef("%s: strategy %s: %w", where, st, err)
		}
	}
	return nil
}
