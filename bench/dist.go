package bench

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/anvil-llm/anvil/scenarios"
)

// ParseDist reads a token-length distribution flag: a bare integer (a constant), or
// KIND:key=value,... with the keys of the scenario schema:
//
//	128
//	constant:value=128
//	uniform:min=64,max=1024
//	lognormal:median=512,sigma=0.8,min=16,max=8192
//	normal:mean=256,stddev=32,min=1,max=1024
//
// The values' ranges are checked with the rest of the load (Plan.Validate).
func ParseDist(spec string) (scenarios.Dist, error) {
	bad := func(why string) (scenarios.Dist, error) {
		return scenarios.Dist{}, fmt.Errorf("%w: distribution %s; expected N or KIND:key=value,... (see --help)", ErrInvalid, why)
	}
	if len(spec) > 256 {
		return bad("is too long")
	}
	if v, ok := parseNumber(spec); ok {
		return scenarios.Dist{Dist: scenarios.DistConstant, Value: v}, nil
	}
	kind, rest, found := strings.Cut(spec, ":")
	if !found || rest == "" {
		return bad("has no parameters")
	}
	keys := map[string][]string{
		scenarios.DistConstant:  {"value"},
		scenarios.DistUniform:   {"min", "max"},
		scenarios.DistLognormal: {"median", "sigma", "min", "max"},
		scenarios.DistNormal:    {"mean", "stddev", "min", "max"},
	}
	allowed, ok := keys[kind]
	if !ok {
		return bad("kind must be constant, uniform, lognormal or normal")
	}
	d := scenarios.Dist{Dist: kind}
	fields := map[string]*float64{"value": &d.Value, "min": &d.Min, "max": &d.Max, "median": &d.Median,
		"sigma": &d.Sigma, "mean": &d.Mean, "stddev": &d.StdDev}
	seen := map[string]bool{}
	for _, kv := range strings.Split(rest, ",") {
		k, v, found := strings.Cut(kv, "=")
		if !found {
			return bad("has a parameter without '='")
		}
		if !contains(allowed, k) {
			return bad("has a key that does not apply to " + kind)
		}
		if seen[k] {
			return bad("repeats a key")
		}
		seen[k] = true
		n, ok := parseNumber(v)
		if !ok {
			return bad("has a value that is not a number")
		}
		*fields[k] = n
	}
	if len(seen) != len(allowed) {
		return bad(kind + " needs " + strings.Join(allowed, ", "))
	}
	return d, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// parseNumber reads a finite plain decimal number.
func parseNumber(s string) (float64, bool) {
	if s == "" || strings.Trim(s, "0123456789.") != "" {
		return 0, false
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(v, 0) {
		return 0, false
	}
	return v, true
}

// DistString writes a distribution in ParseDist's syntax.
func DistString(d scenarios.Dist) string {
	g := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) } // plain decimals, as ParseDist reads them
	switch d.Dist {
	case scenarios.DistConstant:
		return g(d.Value)
	case scenarios.DistUniform:
		return "uniform:min=" + g(d.Min) + ",max=" + g(d.Max)
	case scenarios.DistLognormal:
		return "lognormal:median=" + g(d.Median) + ",sigma=" + g(d.Sigma) + ",min=" + g(d.Min) + ",max=" + g(d.Max)
	case scenarios.DistNormal:
		return "normal:mean=" + g(d.Mean) + ",stddev=" + g(d.StdDev) + ",min=" + g(d.Min) + ",max=" + g(d.Max)
	}
	return "invalid"
}
