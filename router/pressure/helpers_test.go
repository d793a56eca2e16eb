package pressure_test

import "github.com/anvil-llm/anvil/router/scheduler"

const llama = "meta-llama/Llama-3.1-8B-Instruct"

func present(v float64) scheduler.Metric { return scheduler.Metric{Value: v, Present: true} }
