package server_test

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// A parser of the PromQL the dashboard uses, strict enough that a typo, an unbalanced bracket, an
// unknown function or a malformed matcher fails the dashboard's test: numbers, selectors with
// matchers and an optional range, calls of the functions below, aggregations with by (...) before or
// after their argument, parentheses and the four arithmetic operators. (The project does not depend
// on Prometheus's own parser; see the dashboard test.) Each selector and each by clause is reported
// so the test can check names and labels against what the router serves.

type promSelector struct {
	metric string
	labels []string // matcher label names
}

type promQuery struct {
	selectors []promSelector
	// groupings: for each by clause, its labels and the selectors of its argument.
	groupings []promGrouping
}

type promGrouping struct {
	labels    []string
	selectors []promSelector
}

var (
	promToken     = regexp.MustCompile(`^(?:\s+|[0-9]+[smhd]|[0-9]+(?:\.[0-9]+)?(?:e[0-9]+)?|[a-zA-Z_:][a-zA-Z0-9_:]*|"(?:[^"\\]|\\.)*"|=~|!~|!=|[(){}\[\],=/*+-])`)
	promDuration  = regexp.MustCompile(`^[0-9]+[smhd]$`)
	promFunctions = map[string]bool{"rate": true, "increase": true, "histogram_quantile": true, "label_values": true}
	promAggrs     = map[string]bool{"sum": true, "max": true, "min": true, "avg": true, "count": true}
)

type promParser struct {
	toks []string
	pos  int
	q    promQuery
}

// parsePromQL parses expr, or says where it stops making sense.
func parsePromQL(expr string) (promQuery, error) {
	p := &promParser{}
	for rest := expr; rest != ""; {
		tok := promToken.FindString(rest)
		if tok == "" {
			return promQuery{}, fmt.Errorf("unexpected %q", rest)
		}
		rest = rest[len(tok):]
		if strings.TrimSpace(tok) != "" {
			p.toks = append(p.toks, tok)
		}
	}
	if _, err := p.expr(); err != nil {
		return promQuery{}, err
	}
	if p.pos != len(p.toks) {
		return promQuery{}, fmt.Errorf("trailing %q", p.toks[p.pos:])
	}
	return p.q, nil
}

func (p *promParser) peek() string {
	if p.pos < len(p.toks) {
		return p.toks[p.pos]
	}
	return ""
}

func (p *promParser) next() string { t := p.peek(); p.pos++; return t }

func (p *promParser) want(tok string) error {
	if got := p.next(); got != tok {
		return fmt.Errorf("want %q, got %q", tok, got)
	}
	return nil
}

// expr := term (op term)*; it returns the selectors it read.
func (p *promParser) expr() ([]promSelector, error) {
	sels, err := p.term()
	for err == nil && slices.Contains([]string{"/", "*", "+", "-"}, p.peek()) {
		p.next()
		var more []promSelector
		more, err = p.term()
		sels = append(sels, more...)
	}
	return sels, err
}

func (p *promParser) term() ([]promSelector, error) {
	tok := p.next()
	switch {
	case tok == "(":
		sels, err := p.expr()
		if err == nil {
			err = p.want(")")
		}
		return sels, err
	case regexp.MustCompile(`^[0-9]+(\.[0-9]+)?(e[0-9]+)?$`).MatchString(tok):
		return nil, nil
	case promAggrs[tok]:
		return p.aggregation()
	case promFunctions[tok]:
		return p.call()
	case regexp.MustCompile(`^[a-zA-Z_:]`).MatchString(tok):
		return p.selector(tok)
	}
	return nil, fmt.Errorf("unexpected %q", tok)
}

func (p *promParser) aggregation() ([]promSelector, error) {
	var by []string
	var err error
	if p.peek() == "by" {
		if by, err = p.by(); err != nil {
			return nil, err
		}
	}
	if err := p.want("("); err != nil {
		return nil, err
	}
	sels, err := p.expr()
	if err == nil {
		err = p.want(")")
	}
	if err == nil && by == nil && p.peek() == "by" {
		by, err = p.by()
	}
	if by != nil {
		p.q.groupings = append(p.q.groupings, promGrouping{labels: by, selectors: sels})
	}
	return sels, err
}

func (p *promParser) by() ([]string, error) {
	p.next()
	if err := p.want("("); err != nil {
		return nil, err
	}
	labels := []string{}
	for {
		l := p.next()
		if !regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`).MatchString(l) {
			return nil, fmt.Errorf("bad label %q in by", l)
		}
		labels = append(labels, l)
		if p.peek() != "," {
			return labels, p.want(")")
		}
		p.next()
	}
}

func (p *promParser) call() ([]promSelector, error) {
	if err := p.want("("); err != nil {
		return nil, err
	}
	var sels []promSelector
	for {
		more, err := p.expr()
		if err != nil {
			return nil, err
		}
		sels = append(sels, more...)
		if p.peek() != "," {
			return sels, p.want(")")
		}
		p.next()
	}
}

// selector := name ['{' label op "value" (',' ...)* '}'] ['[' duration ']']; a bare name after
// label_values's comma reads as a selector too, and the test tells it apart (it is a label).
func (p *promParser) selector(name string) ([]promSelector, error) {
	s := promSelector{metric: name}
	if p.peek() == "{" {
		p.next()
		for {
			l, op, v := p.next(), p.next(), p.next()
			if !regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`).MatchString(l) || !slices.Contains([]string{"=", "!=", "=~", "!~"}, op) ||
				!strings.HasPrefix(v, `"`) {
				return nil, fmt.Errorf("bad matcher %s%s%s", l, op, v)
			}
			s.labels = append(s.labels, l)
			if p.peek() != "," {
				break
			}
			p.next()
		}
		if err := p.want("}"); err != nil {
			return nil, err
		}
	}
	if p.peek() == "[" {
		p.next()
		if d := p.next(); !promDuration.MatchString(d) {
			return nil, fmt.Errorf("bad range %q", d)
		}
		if err := p.want("]"); err != nil {
			return nil, err
		}
	}
	p.q.selectors = append(p.q.selectors, s)
	return []promSelector{s}, nil
}
