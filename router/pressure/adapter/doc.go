// Package adapter turns one serving engine's Prometheus series into the three normalized pressure
// signals the scheduler reads (spec R006: requests running, requests waiting, KV-cache usage
// fraction). Each engine has its own adapter, chosen by the tier's `engine` setting; the engine's
// names, labels and units never leave this package, so the scoring function sees only
// pressure.Sample.
//
// An adapter reads already-parsed metric families (the text is parsed by the scrape shell with
// expfmt), so the simulator can hand its virtual members' families to the same adapters without a
// network stack. Adapters are pure and total: any families yield a Sample, never a panic, with
// each signal valid, missing (no series for the model: not zero) or malformed.
//
// Engines that label their series with the model (vLLM, SGLang, Triton TensorRT-LLM) are read
// for exactly the served model. llama.cpp and TGI name no model on their page: it is taken as the
// served model's, which the readiness check verified from /v1/models. The shared helpers
// (CountSignal, FractionSignal, CountSignalAll, ReplicaCountSignal, BlockFraction, ...) hold the
// bounds every adapter applies.
package adapter
