package scrape_test

import (
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/pressure"
	"github.com/anvil-llm/anvil/router/scheduler"
)

// TestStageAdoptsByIdentity: a staged configuration changes nothing until committed; then kept
// members keep their samples, a new member reads unknown, and a refresh that was running when the
// cores were swapped completes into nothing.
func TestStageAdoptsByIdentity(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		col := newCollector(false)
		c := newCache(t, col)
		defer c.Close()
		snap(t, c, "chat")
		require.ElementsMatch(t, []string{"a", "b"}, col.answerAll())
		before := snap(t, c, "chat")
		require.Equal(t, scheduler.FreshnessFresh, before["a"].Freshness())

		_, err := c.Stage([]pressure.TierSpec{tier("chat", "a")})
		require.Error(t, err, "a tier of one member is refused, as at startup")

		commit, err := c.Stage([]pressure.TierSpec{tier("chat", "a", "b", "c")})
		require.NoError(t, err)
		peek, err := c.Peek("chat")
		require.NoError(t, err)
		assert.Len(t, peek, 2, "staging changes nothing")

		advance(pressure.RefreshInterval)
		snap(t, c, "chat") // a refresh starts under the old core...
		running := col.take()
		require.Len(t, running, 2)
		commit() // ...and the cores swap under it
		for _, cl := range running {
			cl.reply <- reply{pressure.Sample{KVUsage: present(0.5)}, pressure.ClassOK}
		}
		synctest.Wait()
		peek, err = c.Peek("chat")
		require.NoError(t, err)
		assert.Equal(t, before["a"], peek["a"], "kept sample; the old core's late completion is ignored")
		assert.Equal(t, before["b"], peek["b"])
		assert.Equal(t, scheduler.UnknownPressure(), peek["c"], "a new member reads unknown until probed")
	})
}
