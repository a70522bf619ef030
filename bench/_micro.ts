import { Effect, ManagedRuntime, Layer, Queue, Duration, Metric, Stream, Chunk, Deferred } from "effect"
import * as Protocol from "../packages/core/src/ClaudeProtocol.js"
const lines = [
  `{"type":"system","subtype":"init","cwd":"/work/main","session_id":"3b8f5f5e-1a33-4d1e-9f65-0a8d3a3c7f0b","tools":["Read","Write","Bash"],"mcp_servers":[],"model":"fake-model","permissionMode":"default","apiKeySource":"none","claude_code_version":"fake","uuid":"3b8f5f5e-1a33-4d1e-9f65-0a8d3a3c7f0b"}`,
  `{"type":"assistant","message":{"id":"msg_1","type":"message","role":"assistant","model":"fake-model","content":[{"type":"text","text":"echo: hello"}],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":11,"cache_creation_input_tokens":0,"cache_read_input_tokens":0}},"parent_tool_use_id":null,"session_id":"3b8f5f5e","uuid":"3b8f5f5e"}`,
  `{"type":"result","subtype":"success","is_error":false,"num_turns":1,"session_id":"3b8f5f5e-1a33","duration_ms":0,"duration_api_ms":0,"total_cost_usd":0.001,"usage":{"input_tokens":10,"output_tokens":11,"cache_creation_input_tokens":0,"cache_read_input_tokens":0},"permission_denials":[],"api_error_status":null,"terminal_reason":"completed","stop_reason":"end_turn","result":"echo: hello","uuid":"3b8f5f5e"}`
]
const time = async (label: string, n: number, f: () => unknown | Promise<unknown>) => {
  for (let i = 0; i < n / 10; i++) await f()
  const t = performance.now()
  for (let i = 0; i < n; i++) await f()
  console.log(label.padEnd(50), ((performance.now() - t) / n * 1000).toFixed(2), "µs")
}
await time("decodeLine x3 (one turn)", 50000, () => { for (const l of lines) Protocol.decodeLine(l) })
await time("JSON.parse x3", 50000, () => { for (const l of lines) JSON.parse(l) })
const rt = ManagedRuntime.make(Layer.empty)
await time("ManagedRuntime.runPromise(void)", 20000, () => rt.runPromise(Effect.void))
await time("Effect.runPromise(void)", 20000, () => Effect.runPromise(Effect.void))
const q = Effect.runSync(Queue.unbounded<number>())
await time("offer+take with timeoutOption x3", 20000, () => Effect.runPromise(Effect.gen(function*() {
  for (let i = 0; i < 3; i++) { yield* Queue.offer(q, 1); yield* Queue.take(q).pipe(Effect.timeoutOption(Duration.millis(600000))) }
})))
await time("offer+take plain x3", 20000, () => Effect.runPromise(Effect.gen(function*() {
  for (let i = 0; i < 3; i++) { yield* Queue.offer(q, 1); yield* Queue.take(q) }
})))
const c = Metric.counter("x")
await time("metric tagged increment", 20000, () => Effect.runPromise(Metric.increment(c).pipe(Effect.tagMetrics({ agent: "a", outcome: "ok" }))))
const f = Effect.fn("X.f")(function*(n: number) { return n + 1 })
await time("Effect.fn call", 20000, () => Effect.runPromise(f(1)))
await time("withSpan", 20000, () => Effect.runPromise(Effect.void.pipe(Effect.withSpan("s"))))
await time("Stream.decodeText/splitLines of 3 lines", 5000, () => Effect.runPromise(Stream.make(new TextEncoder().encode(lines.join("\n") + "\n")).pipe(Stream.decodeText(), Stream.splitLines, Stream.runForEach(() => Effect.void))))
await time("fork+join", 20000, () => Effect.runPromise(Effect.fork(Effect.void).pipe(Effect.flatMap((f) => f.await))))
