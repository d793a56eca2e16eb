package admission_test

import (
	"fmt"

	"github.com/anvil-llm/anvil/router/admission"
	"github.com/anvil-llm/anvil/router/scheduler"
)

func Example() {
	set, err := admission.New([]admission.TierSpec{
		{ID: "chat", Kind: admission.KindDirect, MaxConcurrency: 8},
		{ID: "pool", Kind: admission.KindReplica, Strategy: admission.StrategyCapacity, Members: []admission.MemberSpec{
			{ID: "gpu-a", MaxConcurrency: 2}, {ID: "gpu-b", MaxConcurrency: 2},
		}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	pool, _ := set.Tier("pool")
	ready := map[string]bool{"gpu-a": true, "gpu-b": true}
	var pressure map[string]scheduler.Pressure // nil: upstream pressure unknown for every member

	lease, err := pool.AcquireMember(ready, pressure, nil)
	if err != nil {
		fmt.Println("refused:", err) // 503 with Retry-After in the server
		return
	}
	d, _ := lease.Decision()
	fmt.Println("picked", lease.Member(), "from", d.EligibleMemberIDs())

	_ = pool.QuiesceMember("gpu-a", "maintenance")
	changed := pool.Changed() // take the channel before asking, so no change is missed
	idle, _ := pool.Idle("gpu-a")
	fmt.Println("drained:", idle)
	lease.Release() // the handler's one defer; in-flight work is never cancelled
	<-changed       // a drain waits here (with its own deadline), then asks again
	idle, _ = pool.Idle("gpu-a")
	fmt.Println("drained:", idle)

	s := pool.Snapshot()
	fmt.Println(s.State, s.Active, s.MaxConcurrency, s.Members[0].State, s.Members[0].Reason)
	// Output:
	// picked gpu-a from [gpu-a gpu-b]
	// drained: false
	// drained: true
	// admitting 0 4 quiesced maintenance
}
