/**
 * Turn overhead: what the fleet adds to one round trip. The same fake child script is driven three ways, each
 * with one long-lived child: raw child_process (the floor), `fleet.ask`, and the Agent SDK's `query()` in
 * streaming-input mode. Blocks of turns alternate between them so drift (JIT, page cache, thermal) hits
 * all of them alike.
 * With them, the A/B of the turn path (issue 34, item 9; bench/support/turn-queue.ts): the turns of one agent
 * hand-driven (a plain array, as the engine does) or through an Effect `Queue` taken by a fiber of the agent's
 * own, over the engine's process seam and a child of their own, and again in process (no child, no noise).
 *   npx tsx bench/turn-overhead.ts        (BENCH_TURNS=2000 by default; BENCH_TURN_AB=0 leaves the A/B out, as
 *                                          the bench was before issue 34, to compare the fleet's figures across trees)
 */
import { query } from "@anthropic-ai/claude-agent-sdk"
import type { SDKMessage, SDKUserMessage } from "@anthropic-ai/claude-agent-sdk"
import { createFleet } from "../packages/core/src/Client.js"
import {
  FAKE,
  fmtMs,
  fmtRatio,
  isMain,
  main,
  percentile,
  RawChild,
  REALISTIC_ENV,
  row,
  sortedCopy,
  sum,
  targetRow
} from "./lib.js"
import { inProcess, overChild, type TurnPath } from "./support/turn-queue.js"

const TURNS = Number(process.env["BENCH_TURNS"] ?? 2000)
const AB = process.env["BENCH_TURN_AB"] !== "0"
const WARMUP = 300
const BLOCK = 250
const TEXT = "hello"
const EXPECTED = `echo: ${TEXT}`

// What profiling and A/B runs of patched copies of the engine showed (2026-11-29); kept with the miss it explains.
const CAUSE = "Cause of the tail (2026-12-01): the p50 is within target since turns are driven by their events " +
  "(no fiber hop per turn, frames handled as they are read, hand decoders of the big frames, one fleet-wide alarm " +
  "fiber instead of a timer per wait, metrics and report entries written without an effect each). The tail is the " +
  "rest of the Effect machinery per turn: ~70 KB allocated per turn (the raw baseline ~15 KB), half of it the " +
  "platform's Streams over the child's pipes, so young-generation collections (4 to 6 ms each on this machine) land " +
  "in about one turn in 150, and a longer critical path (~0.26 ms of host CPU per turn against 0.08 ms raw) is " +
  "more exposed to preemption on a shared 2-core machine."

interface Driver {
  readonly name: string
  /** One turn; returns its reply text. */
  readonly turn: (text: string) => Promise<string>
  readonly close: () => Promise<void>
}

const rawDriver = async (): Promise<Driver> => {
  const raw = RawChild.fake(REALISTIC_ENV)
  await raw.initialize()
  return {
    name: "raw",
    turn: async (text) => String((await raw.turn(text))["result"]),
    close: async () => {
      await raw.end()
    }
  }
}

const fleetDriver = async (): Promise<Driver> => {
  const fleet = createFleet({ executable: { command: process.execPath, prefixArgs: [FAKE] }, env: REALISTIC_ENV })
  await fleet.spawn("bench")
  return {
    name: "fleet",
    turn: (text) => fleet.ask("bench", text),
    close: () => fleet.shutdown()
  }
}

/** The SDK in streaming-input mode: the prompt is an async iterable fed one user message per turn. */
const sdkDriver = async (): Promise<Driver> => {
  const pending: Array<SDKUserMessage> = []
  let wake: (() => void) | undefined
  let done = false
  const input = async function*(): AsyncGenerator<SDKUserMessage> {
    while (true) {
      while (pending.length > 0) yield pending.shift()!
      if (done) return
      await new Promise<void>((resolve) => (wake = resolve))
      wake = undefined
    }
  }
  const q = query({
    prompt: input(),
    // A .mjs path is started as `<executable> <path> <flags>`: the same `node fake-claude.mjs` the others run.
    options: { pathToClaudeCodeExecutable: FAKE, executable: "node", env: { ...process.env, ...REALISTIC_ENV } }
  })
  const messages = q[Symbol.asyncIterator]()
  const untilResult = async (): Promise<SDKMessage & { readonly type: "result" }> => {
    while (true) {
      const next = await messages.next()
      if (next.done === true) throw new Error("the SDK query ended before a result")
      if (next.value.type === "result") return next.value
    }
  }
  const turn = async (text: string) => {
    pending.push({
      type: "user",
      session_id: "",
      message: { role: "user", content: [{ type: "text", text }] },
      parent_tool_use_id: null
    })
    wake?.()
    const result = await untilResult()
    return result.subtype === "success" ? result.result : `error: ${result.subtype}`
  }
  // The SDK starts its child on the first message; one turn makes the driver ready like the others.
  await turn(TEXT)
  return {
    name: "sdk",
    turn,
    close: async () => {
      done = true
      wake?.()
      // Input ended: the child exits and the message stream completes.
      while (!(await messages.next()).done) { /* drain */ }
    }
  }
}

/** One agent of the turn path's model (see bench/support/turn-queue.ts), over a child or in process. */
const modelDriver = async (path: TurnPath, where: "child" | "memory"): Promise<Driver> => {
  const agent = where === "child" ? await overChild(path, REALISTIC_ENV) : await inProcess(path)
  return { name: `${path}-${where}`, turn: agent.ask, close: agent.close }
}

/** The Queue's cost per turn issue 34 accepts (item 9): under it, the turns would go through a `Queue`. */
const QUEUE_BUDGET_MS = 0.05

/** The turn path's A/B (bench/support/turn-queue.ts): its rows, its means for the notes, and what to read. */
const abResult = (stats: (name: string) => { readonly p50: number; readonly mean: number }) => {
  const raw = stats("raw")
  const handChild = stats("hand-child")
  const queueChild = stats("queue-child")
  const handMemory = stats("hand-memory")
  const queueMemory = stats("queue-memory")
  const queueCost = {
    child: { p50: queueChild.p50 - handChild.p50, mean: queueChild.mean - handChild.mean },
    memory: { p50: queueMemory.p50 - handMemory.p50, mean: queueMemory.mean - handMemory.mean }
  }
  return {
    rows: [
      row(
        "turn path, hand-driven, over a child p50",
        fmtMs(handChild.p50),
        `${fmtMs(raw.p50)} raw`,
        fmtRatio(handChild.p50, raw.p50)
      ),
      row(
        "turn path, Queue, over a child p50",
        fmtMs(queueChild.p50),
        `${fmtMs(handChild.p50)} hand`,
        fmtRatio(queueChild.p50, handChild.p50)
      ),
      row(
        "Queue's cost per turn, over a child p50 (queue − hand)",
        fmtMs(queueCost.child.p50),
        `${fmtMs(handChild.p50)} hand`,
        fmtRatio(queueChild.p50, handChild.p50)
      ),
      row(
        "Queue's cost per turn, over a child mean (queue − hand)",
        fmtMs(queueCost.child.mean),
        `${fmtMs(handChild.mean)} hand`,
        fmtRatio(queueChild.mean, handChild.mean)
      ),
      row("turn path, hand-driven, in process p50 (baseline)", fmtMs(handMemory.p50), "", "1.00×"),
      row(
        "turn path, Queue, in process p50",
        fmtMs(queueMemory.p50),
        `${fmtMs(handMemory.p50)} hand`,
        fmtRatio(queueMemory.p50, handMemory.p50)
      ),
      targetRow(
        "Queue's cost per turn, in process p50 (queue − hand)",
        fmtMs(queueCost.memory.p50),
        `${fmtMs(handMemory.p50)} hand`,
        fmtRatio(queueMemory.p50, handMemory.p50),
        `< ${QUEUE_BUDGET_MS} ms`,
        queueCost.memory.p50 < QUEUE_BUDGET_MS
      ),
      targetRow(
        "Queue's cost per turn, in process mean (queue − hand)",
        fmtMs(queueCost.memory.mean),
        `${fmtMs(handMemory.mean)} hand`,
        fmtRatio(queueMemory.mean, handMemory.mean),
        `< ${QUEUE_BUDGET_MS} ms`,
        queueCost.memory.mean < QUEUE_BUDGET_MS
      )
    ],
    means: `; turn path over a child: hand ${fmtMs(handChild.mean)}, queue ${fmtMs(queueChild.mean)}; ` +
      `in process: hand ${fmtMs(handMemory.mean)}, queue ${fmtMs(queueMemory.mean)}`,
    notes: [
      "Turn path A/B: in process the Queue's own cost shows apart from the child's (the p50 is a typical turn, the " +
      "mean what the Queue adds per turn in all, its tail included: more allocation and two fiber hops a turn); " +
      "over a child, the difference is within the run-to-run noise of a loaded machine. ARCHITECTURE.md keeps " +
      "the figures and the decision (\"The turn path is hand-driven, not a `Queue`\")."
    ]
  }
}

export const run = () =>
  main("turn-overhead", "1. Turn overhead (fake child, sequential turns)", async () => {
    const drivers = [
      await rawDriver(),
      await fleetDriver(),
      await sdkDriver(),
      ...(AB
        ? [
          await modelDriver("hand", "child"),
          await modelDriver("queue", "child"),
          await modelDriver("hand", "memory"),
          await modelDriver("queue", "memory")
        ]
        : [])
    ]
    const samples = new Map<string, Array<number>>(drivers.map((d) => [d.name, []]))
    const notes: Array<string> = []

    for (const d of drivers) {
      const reply = await d.turn(TEXT)
      if (reply !== EXPECTED) throw new Error(`${d.name}: expected "${EXPECTED}", got "${reply}"`)
      for (let i = 0; i < WARMUP; i++) await d.turn(TEXT)
    }

    // Rotate the order of the drivers each round.
    const rounds = Math.ceil(TURNS / BLOCK)
    for (let r = 0; r < rounds; r++) {
      for (let k = 0; k < drivers.length; k++) {
        const d = drivers[(r + k) % drivers.length]!
        const out = samples.get(d.name)!
        const n = Math.min(BLOCK, TURNS - r * BLOCK)
        for (let i = 0; i < n; i++) {
          const t0 = performance.now()
          await d.turn(TEXT)
          out.push(performance.now() - t0)
        }
      }
    }
    for (const d of drivers) await d.close()

    const stats = (name: string) => {
      const s = sortedCopy(samples.get(name)!)
      return { p50: percentile(s, 0.5), p99: percentile(s, 0.99), mean: sum(s) / s.length, n: s.length }
    }
    const raw = stats("raw")
    const fleet = stats("fleet")
    const sdk = stats("sdk")
    const fleetOver = { p50: fleet.p50 - raw.p50, p99: fleet.p99 - raw.p99 }
    const sdkOver = { p50: sdk.p50 - raw.p50, p99: sdk.p99 - raw.p99 }
    const passP50 = fleetOver.p50 <= 0.25
    const passP99 = fleetOver.p99 <= 1

    const ab = AB ? abResult(stats) : { rows: [], means: "", notes: [] }
    notes.push(
      `${raw.n} measured turns per driver after ${WARMUP} warm-up turns; means: raw ${fmtMs(raw.mean)}, ` +
        `fleet ${fmtMs(fleet.mean)}, SDK ${fmtMs(sdk.mean)}${ab.means}.`,
      ...ab.notes
    )
    if (!passP50 || !passP99) {
      notes.push(
        `MISS: the fleet adds ${fmtMs(fleetOver.p50)} at p50 and ${fmtMs(fleetOver.p99)} at p99 ` +
          `(targets ≤ 0.25 ms and ≤ 1 ms).`,
        CAUSE
      )
    }

    return {
      method: `One long-lived \`node fake-claude.mjs\` child per driver, writing the real CLI 2.1.332's frames ` +
        `(system/init, assistant, result with every key, captured against the simulator: FAKE_CLAUDE_FRAMES); ` +
        `${fmtInt(TURNS)} sequential "${TEXT}" turns each, ` +
        `in alternating blocks of ${BLOCK}. Raw = write a user frame on stdin with child_process, read stdout lines ` +
        `until the \`result\` frame. Fleet = \`createFleet(...).ask\`. SDK = \`@anthropic-ai/claude-agent-sdk\` ` +
        `\`query()\` with an async-iterable prompt (one user message per turn, each after the previous result), ` +
        `\`pathToClaudeCodeExecutable\` = the fake script. Overhead = driver percentile − raw percentile. ` +
        `Turn path A/B (bench/support/turn-queue.ts): one agent's turns hand-driven (an array, \`Deferred.unsafeDone\`, ` +
        `the next turn sent from the result's handler) or through an Effect \`Queue\` taken by the agent's own fiber, ` +
        `over the engine's process seam (\`ClaudeCli.layerCommand\`, a child each) and in process (answered on the ` +
        `next macrotask); the Queue's cost = queue − hand, in the same run.`,
      rows: [
        row("raw round trip p50 (baseline)", fmtMs(raw.p50), "", "1.00×"),
        row("raw round trip p99 (baseline)", fmtMs(raw.p99), "", "1.00×"),
        row("fleet ask p50", fmtMs(fleet.p50), `${fmtMs(raw.p50)} raw`, fmtRatio(fleet.p50, raw.p50)),
        row("fleet ask p99", fmtMs(fleet.p99), `${fmtMs(raw.p99)} raw`, fmtRatio(fleet.p99, raw.p99)),
        row("SDK query p50", fmtMs(sdk.p50), `${fmtMs(raw.p50)} raw`, fmtRatio(sdk.p50, raw.p50)),
        row("SDK query p99", fmtMs(sdk.p99), `${fmtMs(raw.p99)} raw`, fmtRatio(sdk.p99, raw.p99)),
        targetRow(
          "fleet overhead p50 (fleet − raw)",
          fmtMs(fleetOver.p50),
          `${fmtMs(sdkOver.p50)} SDK overhead`,
          fmtRatio(fleetOver.p50, sdkOver.p50),
          "≤ 0.25 ms",
          passP50
        ),
        targetRow(
          "fleet overhead p99 (fleet − raw)",
          fmtMs(fleetOver.p99),
          `${fmtMs(sdkOver.p99)} SDK overhead`,
          fmtRatio(fleetOver.p99, sdkOver.p99),
          "≤ 1 ms",
          passP99
        ),
        row(
          "SDK overhead p50 (SDK − raw)",
          fmtMs(sdkOver.p50),
          `${fmtMs(raw.p50)} raw`,
          fmtRatio(sdkOver.p50, raw.p50)
        ),
        row(
          "SDK overhead p99 (SDK − raw)",
          fmtMs(sdkOver.p99),
          `${fmtMs(raw.p99)} raw`,
          fmtRatio(sdkOver.p99, raw.p99)
        ),
        ...ab.rows
      ],
      notes
    }
  })

const fmtInt = (n: number) => n.toLocaleString("en-US")

if (isMain(import.meta.url)) await run()
