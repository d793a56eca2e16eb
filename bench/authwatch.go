package bench

import (
	"net/http"
	"sync"
)

// EarlyAnswers is how many of a run's first answers the token check looks at.
const EarlyAnswers = 8

// authWatch notices a run whose early answers are all 401 Unauthorized: a missing or wrong token,
// which the report would otherwise show only as a count of http_4xx. A request that got no answer
// (a transport failure, a cancellation) is not an answer.
type authWatch struct {
	mu                    sync.Mutex
	answers, unauthorized int
	fired                 bool
}

// note counts one finished request and reports whether the warning is due now: this is the
// EarlyAnswers-th answer and every one so far was a 401.
func (w *authWatch) note(status int) bool {
	if status == 0 {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.answers++
	if status == http.StatusUnauthorized {
		w.unauthorized++
	}
	return w.due(w.answers == EarlyAnswers)
}

// final reports whether a run that ended with fewer than EarlyAnswers answers is due the warning:
// it had answers, every one a 401.
func (w *authWatch) final() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.due(w.answers > 0 && w.answers < EarlyAnswers)
}

// due fires the warning once, when now holds and every answer so far was a 401.
func (w *authWatch) due(now bool) bool {
	if w.fired || !now || w.unauthorized != w.answers {
		return false
	}
	w.fired = true
	return true
}

// warnUnauthorized calls the run's OnAllUnauthorized with the answers counted.
func (r *runner) warnUnauthorized() {
	if f := r.live.OnAllUnauthorized; f != nil {
		r.auth.mu.Lock()
		n := r.auth.answers
		r.auth.mu.Unlock()
		f(n)
	}
}
