/**
 * Every tool, in process (the SDK client on the handler's fetch, no socket), in both protocol eras, over the
 * in-memory Claude of `@flotta/core/Testing` (no process starts) with every timer on the TestClock: results,
 * every error path, progress during a wait, and a cancelled wait. Tests wait for conditions (a timer armed, a
 * progress notification received, a span ended), never for time.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Testing from "@flotta/core/Testing"
import type { CallToolResult, Client } from "@modelcontextprotocol/client"
import { Effect, Exit, Fiber, TestClock } from "effect"
import { tools as toolTable } from "../src/Tools.js"
import type { Era } from "./support.js"
import {
  armed,
  call,
  callAcross,
  connect,
  ERAS,
  fleet,
  forkArmed,
  handler,
  progressLog,
  recordingTracer,
  structured,
  text
} from "./support.js"

interface WaitResult {
  readonly done: boolean
  readonly name: string
  readonly kind: "turn" | "run"
  readonly turnId?: string
  readonly waitedMs: number
  readonly result?: { readonly text?: string; readonly kind?: string; readonly passed?: boolean }
  readonly status?: { readonly status: string; readonly current: string | null; readonly queued: number }
  readonly message: string
}

const EXPECTED_TOOLS = [
  "flotta_spawn",
  // A session's own life (SessionTools.test.ts)
  "flotta_fork",
  "flotta_compact",
  "flotta_clear",
  "flotta_hibernate",
  "flotta_wake",
  "flotta_run",
  "flotta_list",
  "flotta_info",
  "flotta_label",
  "flotta_close",
  "flotta_interrupt",
  "flotta_unpark",
  "flotta_prompt",
  "flotta_ask",
  "flotta_wait",
  "flotta_status",
  "flotta_result",
  "flotta_run_result",
  "flotta_runs",
  "flotta_diff",
  "flotta_transcript",
  "flotta_broadcast",
  "flotta_verify",
  "flotta_reports",
  "flotta_costs",
  "flotta_worktrees",
  "flotta_gc_worktrees",
  // Steering (SchedulerTools.test.ts)
  "flotta_schedule_status",
  "flotta_keep_going",
  "flotta_work_today",
  "flotta_work_on",
  "flotta_pause",
  "flotta_resume",
  "flotta_stop_for_today",
  "flotta_run_routine",
  "flotta_scan_now",
  "flotta_findings",
  // Human approvals (ApprovalTools.test.ts)
  "flotta_approvals",
  "flotta_decide"
]

/** A client of a fresh in-process handler over the fleet in context. */
const session = (era: Era) => Effect.flatMap(handler(), (h) => connect(h.fetch, era))

const spawn = (client: Client, name: string) => call(client, "flotta_spawn", { name }).pipe(Effect.map(structured))

/** A session with these agents spawned through `flotta_spawn`, in order: how most tests start. */
const sessionWith = (era: Era, ...names: ReadonlyArray<string>) =>
  Effect.tap(session(era), (client) => Effect.forEach(names, (name) => spawn(client, name), { discard: true }))

const errorOf = (result: CallToolResult) => {
  assert.isTrue(result.isError, "expected an isError result")
  return (result.structuredContent as { error: { _tag: string; message: string } }).error
}

/** A directory that does not exist: the worktree tools answer NotAGitRepo without starting git. */
const NOWHERE = "/no/such/repository"

for (const era of ERAS) {
  describe(`the fleet over MCP, ${era.era} era`, () => {
    it.scoped("lists every tool with input and output schemas and all four hints", () =>
      Effect.gen(function*() {
        const client = yield* session(era)
        const { tools } = yield* Effect.promise(() => client.listTools())
        assert.sameMembers(tools.map((t) => t.name), EXPECTED_TOOLS)
        for (const tool of tools) {
          assert.strictEqual(tool.inputSchema.type, "object", tool.name)
          assert.strictEqual(tool.outputSchema?.type, "object", tool.name)
          assert.isString(tool.description)
          for (const hint of ["readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"] as const) {
            assert.isBoolean(tool.annotations?.[hint], `${tool.name} ${hint}`)
          }
        }
        const hints = (name: string) => tools.find((t) => t.name === name)!.annotations!
        for (
          const name of [
            "flotta_list",
            "flotta_status",
            "flotta_wait",
            "flotta_reports",
            "flotta_transcript",
            "flotta_runs",
            "flotta_diff"
          ]
        ) {
          assert.isTrue(hints(name).readOnlyHint, name)
        }
        for (const name of ["flotta_close", "flotta_interrupt", "flotta_gc_worktrees"]) {
          assert.isTrue(hints(name).destructiveHint, name)
          assert.isFalse(hints(name).readOnlyHint, name)
        }
        assert.isFalse(hints("flotta_prompt").readOnlyHint)
        assert.isTrue(hints("flotta_prompt").openWorldHint)
        const spawnSchema = tools.find((t) => t.name === "flotta_spawn")!.inputSchema
        assert.deepInclude(spawnSchema.required ?? [], "name")
        assert.strictEqual(toolTable.length, EXPECTED_TOOLS.length)
      }).pipe(Effect.provide(fleet())))

    it.scoped("flotta_costs sums the turns by agent, model and label; a budgeted spawn stops at its budget; list by label", () =>
      Effect.gen(function*() {
        const client = yield* session(era)
        yield* call(client, "flotta_spawn", {
          name: "tight",
          model: "opus",
          maxBudgetUsd: 0.0015,
          labels: { team: "a" }
        })
        yield* call(client, "flotta_spawn", { name: "loose", model: "haiku" })
        yield* call(client, "flotta_ask", { name: "tight", text: "one" })
        yield* call(client, "flotta_ask", { name: "tight", text: "two" })
        yield* call(client, "flotta_ask", { name: "loose", text: "one" })
        const refused = yield* call(client, "flotta_ask", { name: "tight", text: "three" })
        assert.strictEqual(errorOf(refused)._tag, "BudgetExceeded")
        type Report = {
          totalUsd: number
          turns: number
          groups: Array<{ key: string; costUsd: number; turns: number }>
        }
        const byAgent = structured<Report>(yield* call(client, "flotta_costs", { since: "7d" }))
        assert.strictEqual(byAgent.turns, 3)
        assert.deepStrictEqual(byAgent.groups.map((g) => [g.key, g.turns]), [["tight", 2], ["loose", 1]])
        assert.approximately(byAgent.totalUsd, 0.003, 1e-12)
        const byModel = structured<Report>(yield* call(client, "flotta_costs", { by: "model" }))
        assert.deepStrictEqual(byModel.groups.map((g) => g.key), ["opus", "haiku"])
        const byTeam = structured<Report>(yield* call(client, "flotta_costs", { by: "label:team" }))
        assert.deepStrictEqual(byTeam.groups.map((g) => [g.key, g.turns]), [["a", 2], [null, 1]])
        const listed = structured<{ agents: Array<{ name: string; labels?: object }> }>(
          yield* call(client, "flotta_list", { labels: { team: "a" } })
        )
        assert.deepStrictEqual(listed.agents.map((a) => [a.name, a.labels]), [["tight", { team: "a" }]])
        const bad = yield* call(client, "flotta_costs", { since: "yesterday-ish" })
        assert.strictEqual(errorOf(bad)._tag, "InvalidSpec")
      }).pipe(Effect.provide(fleet({ costPerCall: 0.001 }))))

    it.scoped("spawn, prompt, wait, result, status, info, list, transcript and close", () =>
      Effect.gen(function*() {
        const client = yield* session(era)
        const info = yield* spawn(client, "scout")
        assert.strictEqual(info.name, "scout")
        assert.strictEqual(info.status, "idle")
        assert.isTrue(info.alive)
        assert.isNull(info.pid, "the in-memory Claude is no process")

        const prompted = structured<{ turnId: string; status: { queued: number } }>(
          yield* call(client, "flotta_prompt", { name: "scout", text: "hello" })
        )
        assert.strictEqual(prompted.turnId, "t1")
        const waited = structured<WaitResult>(
          yield* call(client, "flotta_wait", { name: "scout", turnId: prompted.turnId })
        )
        assert.isTrue(waited.done)
        assert.strictEqual(waited.result?.text, "echo: hello")

        const result = yield* call(client, "flotta_result", { name: "scout" })
        assert.strictEqual(structured<{ result: { text: string } }>(result).result.text, "echo: hello")
        assert.deepStrictEqual(JSON.parse(text(result)), result.structuredContent, "the text block is the JSON")

        const status = structured<{ name: string; status: string; turns: number }>(
          yield* call(client, "flotta_status", { name: "scout" })
        )
        assert.deepInclude(status, { name: "scout", status: "idle", turns: 1 })
        const again = structured<{ totals: { turns: number } }>(yield* call(client, "flotta_info", { name: "scout" }))
        assert.strictEqual(again.totals.turns, 1)
        const listed = structured<{ agents: Array<{ name: string }> }>(yield* call(client, "flotta_list"))
        assert.deepStrictEqual(listed.agents.map((a) => a.name), ["scout"])

        // Without a turn id, flotta_wait waits for the latest turn.
        yield* call(client, "flotta_prompt", { name: "scout", text: "second" })
        const latest = structured<WaitResult>(yield* call(client, "flotta_wait", { name: "scout" }))
        assert.deepInclude(latest, { done: true, turnId: "t2" })
        const transcript = structured<{ total: number; turns: Array<{ prompt: string; reply: string }> }>(
          yield* call(client, "flotta_transcript", { name: "scout", last: 1 })
        )
        assert.strictEqual(transcript.total, 2)
        assert.deepStrictEqual(transcript.turns.map((t) => [t.prompt, t.reply]), [["second", "echo: second"]])

        assert.deepStrictEqual(structured(yield* call(client, "flotta_close", { name: "scout" })), {
          name: "scout",
          closed: true
        })
        assert.deepStrictEqual(structured<{ agents: Array<unknown> }>(yield* call(client, "flotta_list")).agents, [])
        assert.notProperty(transcript, "closed", "a live agent's transcript is not marked")

        // Closed, its info and transcript are read from the store, marked closed; nothing else can be done with it.
        const closedInfo = structured<{ status: string; closedReason: string; closedAt: string }>(
          yield* call(client, "flotta_info", { name: "scout" })
        )
        assert.deepInclude(closedInfo, { status: "closed", closedReason: "closed by request" })
        assert.match(closedInfo.closedAt, /^\d{4}-\d\d-\d\dT/)
        const closedTranscript = structured<{
          total: number
          turns: Array<{ prompt: string }>
          closed: { reason: string; at: string }
        }>(yield* call(client, "flotta_transcript", { name: "scout", last: 1 }))
        assert.strictEqual(closedTranscript.total, 2)
        assert.deepStrictEqual(closedTranscript.turns.map((t) => t.prompt), ["second"])
        assert.deepStrictEqual(closedTranscript.closed, { reason: "closed by request", at: closedInfo.closedAt })
        const refused = yield* call(client, "flotta_prompt", { name: "scout", text: "again" })
        assert.strictEqual(errorOf(refused)._tag, "AgentNotFound")
        assert.include(errorOf(refused).message, `agent "scout" was closed at ${closedInfo.closedAt}`)
      }).pipe(Effect.provide(fleet())))

    it.scoped("ask returns the reply within the bound, or the turn id and status to wait again", () =>
      Effect.gen(function*() {
        const client = yield* sessionWith(era, "asker")
        const quick = structured<WaitResult>(yield* call(client, "flotta_ask", { name: "asker", text: "hello" }))
        assert.deepInclude(quick, { done: true, kind: "turn", turnId: "t1" })
        assert.strictEqual(quick.result?.text, "echo: hello")

        // The bound (0.2 s) ends the wait before the turn (1.2 s): done: false, with what to call next.
        const slow = structured<WaitResult>(
          yield* callAcross(
            client,
            "flotta_ask",
            { name: "asker", text: "slow 1200 late", timeoutSeconds: 0.2 },
            "200 millis"
          )
        )
        assert.deepInclude(slow, { done: false, turnId: "t2", waitedMs: 200 })
        assert.strictEqual(slow.status?.current, "t2")
        assert.strictEqual(
          slow.message,
          "agent asker: turn t2 running for 0 s; call flotta_wait again with this turnId"
        )
        const later = structured<WaitResult>(
          yield* callAcross(
            client,
            "flotta_wait",
            { name: "asker", turnId: "t2", timeoutSeconds: 10 },
            "10 seconds",
            "1 second"
          )
        )
        assert.deepInclude(later, { done: true, turnId: "t2", waitedMs: 1000 })
        assert.strictEqual(later.result?.text, "slow done late")
      }).pipe(Effect.provide(fleet())))

    it.scoped("a wait sends progress with a meaningful message every few seconds", () =>
      Effect.gen(function*() {
        const client = yield* sessionWith(era, "patient")
        yield* call(client, "flotta_prompt", { name: "patient", text: "slow 7400 at last" })
        yield* call(client, "flotta_prompt", { name: "patient", text: "hello" })
        const { all, onprogress, received } = yield* progressLog
        // Joined below; running on the server once its 45 s bound is armed.
        const waiting = yield* forkArmed(
          call(client, "flotta_wait", { name: "patient", turnId: "t1" }, {
            onprogress,
            resetTimeoutOnProgress: true
          }),
          "45 seconds"
        )
        yield* TestClock.adjust("3 seconds")
        yield* received(1)
        yield* armed("3 seconds") // the next tick
        yield* TestClock.adjust("3 seconds")
        yield* received(2)
        yield* TestClock.adjust("1400 millis")
        const waited = structured<WaitResult>(yield* Fiber.join(waiting))
        assert.deepInclude(waited, { done: true, waitedMs: 7400 })
        assert.strictEqual(waited.result?.text, "slow done at last")
        // One every 3 s of the wait, none at its end: the time waited, the bound, and the state in words.
        assert.deepStrictEqual((yield* all).map((p) => [p.progress, p.total, p.message]), [
          [3, 45, "agent patient: turn t1 running for 3 s (1 queued)"],
          [6, 45, "agent patient: turn t1 running for 6 s (1 queued)"]
        ])
      }).pipe(Effect.provide(fleet())))

    it.scoped("a cancelled wait reaches the tool and never cancels the turn", () => {
      const { endedSpan, tracer } = recordingTracer()
      return Effect.gen(function*() {
        const client = yield* sessionWith(era, "steady")
        yield* call(client, "flotta_prompt", { name: "steady", text: "slow 1500 anyway" })
        const abort = new AbortController()
        // Running on the server once its 45 s bound is armed.
        const waiting = yield* forkArmed(
          Effect.promise(() =>
            client.callTool({ name: "flotta_wait", arguments: { name: "steady", turnId: "t1" } }, {
              signal: abort.signal,
              onprogress: () => {}
            }).then(() => "answered", (e: unknown) => `rejected: ${String(e)}`)
          ),
          "45 seconds"
        )
        abort.abort("the user gave up")
        assert.match(yield* Fiber.join(waiting), /^rejected/)
        // The cancellation reached the running tool: its span ended interrupted. The clock stood still, so the
        // wait (bound 45 s, turn 1.5 s) could not have ended any other way.
        const span = yield* endedSpan("mcp.flotta_wait")
        assert.isTrue(Exit.isInterrupted(span.exit), "the wait's span ended without interruption")
        // ...and the turn went on.
        const status = structured<{ current: string | null }>(yield* call(client, "flotta_status", { name: "steady" }))
        assert.strictEqual(status.current, "t1")
        yield* TestClock.adjust("1500 millis")
        const done = structured<WaitResult>(yield* call(client, "flotta_wait", { name: "steady", turnId: "t1" }))
        assert.strictEqual(done.result?.text, "slow done anyway")
      }).pipe(Effect.provide(fleet()), Effect.withTracer(tracer))
    })

    it.scoped("typed failures are isError results that name the error and what to do", () =>
      Effect.gen(function*() {
        const client = yield* sessionWith(era, "alpha")

        const missing = yield* call(client, "flotta_info", { name: "nope" })
        assert.deepStrictEqual(errorOf(missing), {
          _tag: "AgentNotFound",
          message: "no agent named \"nope\" (live agents: alpha)"
        })
        assert.match(text(missing), /^AgentNotFound: no agent named "nope" \(live agents: alpha\)\. Call flotta_list/)

        assert.strictEqual(errorOf(yield* call(client, "flotta_spawn", { name: "alpha" }))._tag, "AgentAlreadyExists")
        assert.strictEqual(errorOf(yield* call(client, "flotta_spawn", { name: "Bad Name" }))._tag, "InvalidName")

        yield* call(client, "flotta_prompt", { name: "alpha", text: "hang" })
        const pending = yield* call(client, "flotta_result", { name: "alpha", turnId: "t1" })
        assert.strictEqual(errorOf(pending)._tag, "TurnPending")
        assert.match(text(pending), /flotta_wait/)
        assert.strictEqual(
          errorOf(yield* call(client, "flotta_result", { name: "alpha", turnId: "t9" }))._tag,
          "NoResult"
        )
        assert.strictEqual(
          errorOf(yield* call(client, "flotta_wait", { name: "alpha", turnId: "t9" }))._tag,
          "NoResult"
        )

        const interrupted = structured<{ interrupted: boolean; turnId: string }>(
          yield* call(client, "flotta_interrupt", { name: "alpha" })
        )
        assert.deepStrictEqual(interrupted, { name: "alpha", interrupted: true, turnId: "t1" } as never)
        const stopped = yield* call(client, "flotta_wait", { name: "alpha", turnId: "t1" })
        assert.strictEqual(errorOf(stopped)._tag, "TurnInterrupted")
        assert.match(text(stopped), /^TurnInterrupted: turn t1 of "alpha" was interrupted\. Prompt the agent again/)
        assert.isFalse(
          structured<{ interrupted: boolean }>(yield* call(client, "flotta_interrupt", { name: "alpha" }))
            .interrupted
        )

        const failed = yield* call(client, "flotta_ask", { name: "alpha", text: "error 529" })
        assert.strictEqual(errorOf(failed)._tag, "TurnFailed")
        assert.match(text(failed), /HTTP 529/)

        // The turn's deadline is armed twice: by the agent and by the wait.
        const timing = yield* forkArmed(
          call(client, "flotta_ask", { name: "alpha", text: "hang", turnTimeoutSeconds: 0.3 }),
          "300 millis",
          2
        )
        yield* TestClock.adjust("300 millis")
        const timedOut = yield* Fiber.join(timing)
        assert.strictEqual(errorOf(timedOut)._tag, "TurnTimeout")
        assert.match(text(timedOut), /larger turnTimeoutSeconds/)
        const refused = yield* call(client, "flotta_spawn", { name: "lost" })
        assert.strictEqual(errorOf(refused)._tag, "SpawnFailed")
        assert.match(text(refused), /fatal: no credentials.*Check cwd, model and the claude CLI/s)

        assert.strictEqual(errorOf(yield* call(client, "flotta_run_result", { name: "ghost" }))._tag, "RunNotFound")
        assert.strictEqual(
          errorOf(yield* call(client, "flotta_wait", { name: "ghost", run: true }))._tag,
          "RunNotFound"
        )
        const worktrees = yield* call(client, "flotta_worktrees", { cwd: NOWHERE })
        assert.strictEqual(errorOf(worktrees)._tag, "NotAGitRepo")
        assert.match(text(worktrees), /Pass a cwd inside a git repository/)
        assert.strictEqual(errorOf(yield* call(client, "flotta_run", { cwd: NOWHERE }))._tag, "InvalidSpec")

        // A turn cut short by close: the wait reports AgentClosed, though the agent is gone.
        yield* call(client, "flotta_prompt", { name: "alpha", text: "hang" })
        // Running once its 45 s bound is armed.
        const waiting = yield* forkArmed(call(client, "flotta_wait", { name: "alpha", turnId: "t4" }), "45 seconds")
        yield* call(client, "flotta_close", { name: "alpha" })
        const closed = yield* Fiber.join(waiting)
        assert.strictEqual(errorOf(closed)._tag, "AgentClosed")
        const gone = yield* call(client, "flotta_prompt", { name: "alpha", text: "hello" })
        assert.strictEqual(errorOf(gone)._tag, "AgentNotFound")
        assert.match(
          errorOf(gone).message,
          /^agent "alpha" was closed at \S+ \(closed by request\): only its info and transcript can still be read \(no agents are live\)$/
        )
      }).pipe(Effect.provide(fleet({
        failStart: ({ agent }) => (agent === "lost" ? "fatal: no credentials" : undefined)
      }))))

    it.scoped("invalid arguments are refused with the bad field named", () =>
      Effect.gen(function*() {
        const client = yield* session(era)
        const missing = yield* call(client, "flotta_prompt", { name: "a" })
        assert.isTrue(missing.isError)
        assert.match(text(missing), /Invalid arguments for tool flotta_prompt: .*\btext\b.*missing/)
        const typo = yield* call(client, "flotta_wait", { name: "a", turnID: "t1" })
        assert.match(text(typo), /turnID.*unexpected/)
        const tooLong = yield* call(client, "flotta_wait", { name: "a", timeoutSeconds: 90 })
        assert.match(text(tooLong), /timeoutSeconds/)
        const wrongType = yield* call(client, "flotta_spawn", { name: "a", permission: "root" })
        assert.match(text(wrongType), /permission/)
        const unknown = yield* Effect.promise(() =>
          client.callTool({ name: "flotta_nope", arguments: {} }).then(
            (r) => text(r as never),
            (e: unknown) => String(e)
          )
        )
        assert.match(unknown, /flotta_nope not found/)
      }).pipe(Effect.provide(fleet())))

    it.scoped("broadcast asks every live agent and reports each outcome", () =>
      Effect.gen(function*() {
        const client = yield* sessionWith(era, "one", "two")
        yield* call(client, "flotta_prompt", { name: "two", text: "work" })
        // Both agents' waits arm the 0.4 s bound.
        const broadcasting = yield* forkArmed(
          call(client, "flotta_broadcast", { text: "hello", timeoutSeconds: 0.4 }),
          "400 millis",
          2
        )
        yield* TestClock.adjust("400 millis")
        const { agents } = structured<{
          agents: Array<{ name: string; done: boolean; ok: boolean; text?: string; turnId?: string }>
        }>(yield* Fiber.join(broadcasting))
        const byName = Object.fromEntries(agents.map((a) => [a.name, a]))
        assert.deepInclude(byName.one, { done: true, ok: true, text: "echo: hello", turnId: "t1" })
        // "two" is still on its slow turn: the broadcast's turn waits behind it.
        assert.deepInclude(byName.two, { done: false, ok: true, turnId: "t2" })
        yield* TestClock.adjust("600 millis")
        const later = structured<WaitResult>(yield* call(client, "flotta_wait", { name: "two", turnId: "t2" }))
        assert.strictEqual(later.result?.text, "echo: hello")
      }).pipe(Effect.provide(fleet({
        // "one" answers in 0.1 s; "two" spends 1 s on its first turn, then echoes.
        model: ({ agent, prompt, turn }) =>
          agent === "one"
            ? Testing.delay("100 millis", `echo: ${prompt}`)
            : turn === 1
            ? Testing.delay("1 second", "busy")
            : `echo: ${prompt}`
      }))))

    it.scoped("runs and verifies: start at once, wait, fetch the result", () =>
      Effect.gen(function*() {
        const client = yield* session(era)
        const started = structured<{ name: string; kind: string; status: string }>(
          yield* call(client, "flotta_run", { prompt: "hello", name: "errand" })
        )
        assert.deepInclude(started, { name: "errand", kind: "run", status: "running" })
        const waited = structured<WaitResult>(yield* call(client, "flotta_wait", { name: "errand", run: true }))
        assert.deepInclude(waited, { done: true, kind: "run" })
        assert.strictEqual(waited.result?.text, "echo: hello")
        const fetched = structured<{ kind: string; result: { text: string } }>(
          yield* call(client, "flotta_run_result", { name: "errand" })
        )
        assert.strictEqual(fetched.kind, "run")
        assert.strictEqual(fetched.result.text, "echo: hello")
        // A run is found by name alone too.
        assert.isTrue(structured<WaitResult>(yield* call(client, "flotta_wait", { name: "errand" })).done)

        // With a JSON schema, the run's structured output comes back through the wait.
        yield* call(client, "flotta_run", {
          prompt: "json {\"items\":[1,2]}",
          name: "shaped",
          jsonSchema: { type: "object" }
        })
        const shaped = structured<{ result: { structuredOutput?: unknown } }>(
          yield* call(client, "flotta_wait", { name: "shaped", run: true })
        )
        assert.deepStrictEqual(shaped.result.structuredOutput, { items: [1, 2] })

        // A verify starts at once and its outcome comes through the same wait: here, no repository at all (so
        // git never starts). test/mcp-worktrees.test.ts verifies in real repositories.
        const checking = structured<{ name: string; kind: string }>(
          yield* call(client, "flotta_verify", { cwd: NOWHERE, branch: "main", checks: ["true"] })
        )
        assert.strictEqual(checking.kind, "verify")
        const missing = yield* call(client, "flotta_wait", { name: checking.name, run: true })
        assert.strictEqual(errorOf(missing)._tag, "NotAGitRepo")
        assert.strictEqual(errorOf(yield* call(client, "flotta_gc_worktrees", { cwd: NOWHERE }))._tag, "NotAGitRepo")

        // The runs and verifies, newest first (started at one instant here: then by name), with their outcome.
        interface Listed {
          readonly runs: ReadonlyArray<{ name: string; kind: string; state: string; error: string | null }>
        }
        const listed = structured<Listed>(yield* call(client, "flotta_runs", {}))
        assert.deepStrictEqual(listed.runs.map((r) => [r.name, r.kind, r.state, r.error]), [
          ["errand", "run", "succeeded", null],
          ["shaped", "run", "succeeded", null],
          [checking.name, "verify", "failed", "NotAGitRepo"]
        ])
        const failed = structured<Listed>(yield* call(client, "flotta_runs", { state: "failed", limit: 1 }))
        assert.deepStrictEqual(failed.runs.map((r) => r.name), [checking.name])
        const refused = yield* call(client, "flotta_runs", { state: "done" })
        assert.isTrue(refused.isError)
        assert.include(text(refused), "state")
      }).pipe(Effect.provide(fleet())))

    it.scoped("flotta_diff: a worktree run's files and patch; NoDiff without a worktree, RunNotFound unknown", () =>
      Effect.gen(function*() {
        const client = yield* session(era)
        yield* call(client, "flotta_run", { prompt: "edit", name: "editor", worktree: true, cwd: "/repo" })
        assert.isTrue(structured<WaitResult>(yield* call(client, "flotta_wait", { name: "editor", run: true })).done)
        const diff = structured<{
          name: string
          running: boolean
          files: ReadonlyArray<{ path: string; added: number; removed: number }>
          added: number
          removed: number
          patch: string
          truncated: boolean
        }>(yield* call(client, "flotta_diff", { name: "editor" }))
        assert.deepInclude(diff, { name: "editor", running: false, added: 3, removed: 1, truncated: false })
        assert.deepStrictEqual(diff.files, [
          { path: "a.txt", added: 1, removed: 1 },
          { path: "src/new.ts", added: 2, removed: 0 }
        ])
        assert.include(diff.patch, "+++ b/src/new.ts\n@@ -0,0 +1,2 @@\n+export const x = 1\n")
        yield* call(client, "flotta_run", { prompt: "hello", name: "plain" })
        yield* call(client, "flotta_wait", { name: "plain", run: true })
        const none = errorOf(yield* call(client, "flotta_diff", { name: "plain" }))
        assert.strictEqual(none._tag, "NoDiff")
        assert.include(none.message, "had no worktree")
        assert.strictEqual(errorOf(yield* call(client, "flotta_diff", { name: "ghost" }))._tag, "RunNotFound")
      }).pipe(Effect.provide(fleet({
        git: Testing.git({
          changes: ({ name }) =>
            name === "editor"
              ? [
                { path: "src/new.ts", after: "export const x = 1\nexport const y = 2\n" },
                { path: "a.txt", before: "old\n", after: "new\n" }
              ]
              : []
        })
      }))))

    it.scoped("flotta_run with attempts: each verified in its worktree, the winner with every attempt's report", () =>
      Effect.gen(function*() {
        const client = yield* session(era)
        yield* call(client, "flotta_run", {
          prompt: "attempt {{attempt}}",
          name: "best",
          attempts: 3,
          pick: "cheapest",
          verify: { checks: ["npm test"], checkTimeoutSeconds: 30 }
        })
        const waited = structured<{ result: { text: string; attempt: number; attempts: Array<{ status: string }> } }>(
          yield* call(client, "flotta_wait", { name: "best", run: true })
        )
        assert.strictEqual(waited.result.attempt, 3)
        assert.strictEqual(waited.result.text, "echo: attempt 3")
        assert.deepStrictEqual(waited.result.attempts.map((a) => a.status), ["failed", "failed", "passed"])
        yield* call(client, "flotta_run", { prompt: "x", name: "none", attempts: 2, verify: { checks: ["npm test"] } })
        const none = errorOf(yield* call(client, "flotta_wait", { name: "none", run: true }))
        assert.strictEqual(none._tag, "NoAttemptPassed")
        assert.include(none.message, "attempt 1: `npm test` exited 1")
        const bad = yield* call(client, "flotta_run", { prompt: "x", attempts: 0 })
        assert.isTrue(bad.isError)
        assert.include(text(bad), "attempts")
      }).pipe(Effect.provide(fleet({
        git: Testing.git({ check: ({ env }) => (env["FLOTTA_ATTEMPT"] === "3" ? 0 : 1) })
      }))))

    it.scoped("reports page by cursor, filtered by agent and kinds", () =>
      Effect.gen(function*() {
        const client = yield* sessionWith(era, "first", "second")
        yield* call(client, "flotta_ask", { name: "first", text: "hello" })
        type Page = { entries: Array<{ seq: number; agent: string; kind: string }>; next: number }
        const page = structured<Page>(yield* call(client, "flotta_reports", { limit: 2 }))
        assert.deepStrictEqual(page.entries.map((e) => e.seq), [1, 2])
        const rest = structured<Page>(yield* call(client, "flotta_reports", { cursor: page.next }))
        assert.strictEqual(rest.entries[0]?.seq, 3)
        const mine = structured<Page>(
          yield* call(client, "flotta_reports", { agent: "first", kinds: ["turn_started", "result"] })
        )
        assert.deepStrictEqual(mine.entries.map((e) => [e.agent, e.kind]), [["first", "turn_started"], [
          "first",
          "result"
        ]])
      }).pipe(Effect.provide(fleet())))

    it.scoped("transcripts and the report log are readable as resources", () =>
      Effect.gen(function*() {
        const client = yield* sessionWith(era, "reader")
        yield* call(client, "flotta_ask", { name: "reader", text: "hello" })
        const { resources } = yield* Effect.promise(() => client.listResources())
        const uris = resources.map((r) => r.uri)
        assert.includeMembers(uris, [
          "flotta://reports",
          "flotta://agents/reader/transcript",
          "flotta://agents/reader/reports"
        ])
        const { resourceTemplates } = yield* Effect.promise(() => client.listResourceTemplates())
        assert.includeMembers(resourceTemplates.map((t) => t.uriTemplate), [
          "flotta://agents/{name}/transcript",
          "flotta://agents/{name}/reports"
        ])
        const read = (uri: string) =>
          Effect.promise(() => client.readResource({ uri })).pipe(
            Effect.map((r) => JSON.parse((r.contents[0] as { text: string }).text))
          )
        const transcript = yield* read("flotta://agents/reader/transcript")
        assert.strictEqual(transcript.turns[0].reply, "echo: hello")
        const log = yield* read("flotta://reports")
        assert.includeMembers(log.entries.map((e: { kind: string }) => e.kind), ["spawned", "result"])
        const own = yield* read("flotta://agents/reader/reports")
        assert.isTrue(own.entries.every((e: { agent: string }) => e.agent === "reader"))
        const unknown = yield* Effect.promise(() =>
          client.readResource({ uri: "flotta://agents/nobody/transcript" }).then(() => "read", (e) => String(e))
        )
        assert.match(unknown, /nobody/)
      }).pipe(Effect.provide(fleet())))
  })
}
