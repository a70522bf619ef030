/**
 * Every tool, in process (the SDK client on the handler's fetch, no socket), in both protocol eras, over the
 * fake claude CLI: results, every error path, progress during a wait, and a cancelled wait.
 */
import { assert, describe, it } from "@effect/vitest"
import type { CallToolResult, Client } from "@modelcontextprotocol/client"
import { Effect } from "effect"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { tools as toolTable } from "../src/Tools.js"
import type { Era } from "./support.js"
import {
  call,
  connect,
  ERAS,
  eventually,
  fakeFleet,
  handler,
  recordingTracer,
  structured,
  tempDir,
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
  "flotta_run",
  "flotta_list",
  "flotta_info",
  "flotta_close",
  "flotta_interrupt",
  "flotta_prompt",
  "flotta_ask",
  "flotta_wait",
  "flotta_status",
  "flotta_result",
  "flotta_run_result",
  "flotta_transcript",
  "flotta_broadcast",
  "flotta_verify",
  "flotta_reports",
  "flotta_worktrees",
  "flotta_gc_worktrees"
]

/** A client of a fresh in-process handler over the fake fleet. */
const session = (era: Era) => Effect.flatMap(handler(), (h) => connect(h.fetch, era))

const spawn = (client: Client, name: string) => call(client, "flotta_spawn", { name }).pipe(Effect.map(structured))

const errorOf = (result: CallToolResult) => {
  assert.isTrue(result.isError, "expected an isError result")
  return (result.structuredContent as { error: { _tag: string; message: string } }).error
}

const gitRepo = Effect.gen(function*() {
  const dir = yield* tempDir
  const git = (...args: Array<string>) =>
    execFileSync("git", ["-c", "user.email=t@example.com", "-c", "user.name=t", ...args], { cwd: dir })
  git("init", "-q", "-b", "main")
  fs.writeFileSync(path.join(dir, "README.md"), "hello\n")
  git("add", ".")
  git("commit", "-q", "-m", "init")
  return dir
})

for (const era of ERAS) {
  describe(`the fleet over MCP, ${era.era} era`, () => {
    it.scopedLive("lists every tool with input and output schemas and all four hints", () =>
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
        for (const name of ["flotta_list", "flotta_status", "flotta_wait", "flotta_reports", "flotta_transcript"]) {
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
      }).pipe(Effect.provide(fakeFleet())))

    it.scopedLive("spawn, prompt, wait, result, status, info, list, transcript and close", () =>
      Effect.gen(function*() {
        const client = yield* session(era)
        const info = yield* spawn(client, "scout")
        assert.strictEqual(info.name, "scout")
        assert.strictEqual(info.status, "idle")
        assert.isNumber(info.pid)

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
      }).pipe(Effect.provide(fakeFleet())))

    it.scopedLive("ask returns the reply within the bound, or the turn id and status to wait again", () =>
      Effect.gen(function*() {
        const client = yield* session(era)
        yield* spawn(client, "asker")
        const quick = structured<WaitResult>(yield* call(client, "flotta_ask", { name: "asker", text: "hello" }))
        assert.deepInclude(quick, { done: true, kind: "turn", turnId: "t1" })
        assert.strictEqual(quick.result?.text, "echo: hello")

        const slow = structured<WaitResult>(
          yield* call(client, "flotta_ask", { name: "asker", text: "slow 1200 late", timeoutSeconds: 0.2 })
        )
        assert.deepInclude(slow, { done: false, turnId: "t2" })
        assert.strictEqual(slow.status?.current, "t2")
        assert.match(slow.message, /turn t2 running for \d+ s; call flotta_wait again/)
        const later = structured<WaitResult>(
          yield* call(client, "flotta_wait", { name: "asker", turnId: "t2", timeoutSeconds: 10 })
        )
        assert.deepInclude(later, { done: true, turnId: "t2" })
        assert.strictEqual(later.result?.text, "slow done late")
      }).pipe(Effect.provide(fakeFleet())))

    it.scopedLive("a wait sends progress with a meaningful message every few seconds", () =>
      Effect.gen(function*() {
        const client = yield* session(era)
        yield* spawn(client, "patient")
        yield* call(client, "flotta_prompt", { name: "patient", text: "slow 3400 at last" })
        yield* call(client, "flotta_prompt", { name: "patient", text: "hello" })
        const progress: Array<{ progress: number; total?: number | undefined; message?: string | undefined }> = []
        const waited = structured<WaitResult>(
          yield* call(client, "flotta_wait", { name: "patient", turnId: "t1" }, {
            onprogress: (p) => progress.push(p),
            resetTimeoutOnProgress: true
          })
        )
        assert.isTrue(waited.done)
        assert.strictEqual(waited.result?.text, "slow done at last")
        assert.isAtLeast(progress.length, 1)
        assert.match(progress[0]!.message ?? "", /^agent patient: turn t1 running for [34] s \(1 queued\)$/)
        assert.strictEqual(progress[0]!.total, 45)
        assert.isAbove(progress[0]!.progress, 2.5)
      }).pipe(Effect.provide(fakeFleet())))

    it.scopedLive("a cancelled wait reaches the tool and never cancels the turn", () => {
      const { ended, tracer } = recordingTracer()
      return Effect.gen(function*() {
        const client = yield* session(era)
        yield* spawn(client, "steady")
        yield* call(client, "flotta_prompt", { name: "steady", text: "slow 1500 anyway" })
        const abort = new AbortController()
        const waiting = Effect.promise(() =>
          client.callTool({ name: "flotta_wait", arguments: { name: "steady", turnId: "t1" } }, {
            signal: abort.signal,
            onprogress: () => {}
          }).then(() => "answered", (e: unknown) => `rejected: ${String(e)}`)
        )
        const fiber = yield* Effect.fork(waiting)
        yield* Effect.sleep("250 millis")
        const abortedAt = Date.now()
        abort.abort("the user gave up")
        assert.match(yield* fiber.await.pipe(Effect.flatMap((exit) => exit)), /^rejected/)
        // The cancellation reached the running tool: its span ended interrupted, promptly.
        const span = yield* eventually(
          () => ended.find((s) => s.name === "mcp.flotta_wait"),
          (s) => s !== undefined,
          3000
        )
        assert.isDefined(span, "the wait was never interrupted")
        assert.isTrue(span!.exit._tag === "Failure", "the wait's span ended without interruption")
        assert.isBelow(span!.at - abortedAt, 500, "the cancellation took too long to reach the tool")
        // ...and the turn went on.
        const status = structured<{ current: string | null }>(yield* call(client, "flotta_status", { name: "steady" }))
        assert.strictEqual(status.current, "t1")
        const done = structured<WaitResult>(yield* call(client, "flotta_wait", { name: "steady", turnId: "t1" }))
        assert.strictEqual(done.result?.text, "slow done anyway")
      }).pipe(Effect.provide(fakeFleet()), Effect.withTracer(tracer))
    })

    it.scopedLive("typed failures are isError results that name the error and what to do", () =>
      Effect.gen(function*() {
        const client = yield* session(era)
        yield* spawn(client, "alpha")

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

        const timedOut = yield* call(client, "flotta_ask", { name: "alpha", text: "hang", turnTimeoutSeconds: 0.3 })
        assert.strictEqual(errorOf(timedOut)._tag, "TurnTimeout")
        assert.match(text(timedOut), /larger turnTimeoutSeconds/)
        const nowhere = yield* call(client, "flotta_spawn", { name: "lost", cwd: "/no/such/directory/anywhere" })
        assert.strictEqual(errorOf(nowhere)._tag, "SpawnFailed")

        assert.strictEqual(errorOf(yield* call(client, "flotta_run_result", { name: "ghost" }))._tag, "RunNotFound")
        assert.strictEqual(
          errorOf(yield* call(client, "flotta_wait", { name: "ghost", run: true }))._tag,
          "RunNotFound"
        )
        const notGit = yield* tempDir
        const worktrees = yield* call(client, "flotta_worktrees", { cwd: notGit })
        assert.strictEqual(errorOf(worktrees)._tag, "NotAGitRepo")
        assert.match(text(worktrees), /Pass a cwd inside a git repository/)
        assert.strictEqual(errorOf(yield* call(client, "flotta_run", { cwd: notGit }))._tag, "InvalidSpec")

        // A turn cut short by close: the wait reports AgentClosed, though the agent is gone.
        yield* call(client, "flotta_prompt", { name: "alpha", text: "hang" })
        const waiting = yield* Effect.fork(call(client, "flotta_wait", { name: "alpha", turnId: "t4" }))
        yield* Effect.sleep("100 millis")
        yield* call(client, "flotta_close", { name: "alpha" })
        const closed = yield* waiting.await.pipe(Effect.flatMap((exit) => exit))
        assert.strictEqual(errorOf(closed)._tag, "AgentClosed")
        const gone = yield* call(client, "flotta_prompt", { name: "alpha", text: "hello" })
        assert.deepStrictEqual(errorOf(gone), {
          _tag: "AgentNotFound",
          message: "no agent named \"alpha\" (no agents are live)"
        })
      }).pipe(Effect.provide(fakeFleet())))

    it.scopedLive("invalid arguments are refused with the bad field named", () =>
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
      }).pipe(Effect.provide(fakeFleet())))

    it.scopedLive("broadcast asks every live agent and reports each outcome", () =>
      Effect.gen(function*() {
        const client = yield* session(era)
        yield* spawn(client, "one")
        yield* spawn(client, "two")
        yield* call(client, "flotta_prompt", { name: "two", text: "slow 1000 busy" })
        const { agents } = structured<{
          agents: Array<{ name: string; done: boolean; ok: boolean; text?: string; turnId?: string }>
        }>(yield* call(client, "flotta_broadcast", { text: "hello", timeoutSeconds: 0.4 }))
        const byName = Object.fromEntries(agents.map((a) => [a.name, a]))
        assert.deepInclude(byName.one, { done: true, ok: true, text: "echo: hello", turnId: "t1" })
        // "two" is still on its slow turn: the broadcast's turn waits behind it.
        assert.deepInclude(byName.two, { done: false, ok: true, turnId: "t2" })
        const later = structured<WaitResult>(yield* call(client, "flotta_wait", { name: "two", turnId: "t2" }))
        assert.strictEqual(later.result?.text, "echo: hello")
      }).pipe(Effect.provide(fakeFleet())))

    it.scopedLive("runs, verifies and worktrees: start at once, wait, fetch the result, collect", () =>
      Effect.gen(function*() {
        const client = yield* session(era)
        const repo = yield* gitRepo
        const started = structured<{ name: string; kind: string; status: string }>(
          yield* call(client, "flotta_run", { prompt: "hello", cwd: repo, name: "errand" })
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

        const checking = structured<{ name: string }>(
          yield* call(client, "flotta_verify", { cwd: repo, branch: "main", checks: ["test -f README.md"] })
        )
        const verdict = structured<WaitResult>(yield* call(client, "flotta_wait", { name: checking.name, run: true }))
        assert.strictEqual(verdict.result?.kind, "verify")
        assert.isTrue(verdict.result?.passed)
        const branchless = structured<{ name: string }>(
          yield* call(client, "flotta_verify", { cwd: repo, branch: "no-such-branch", checks: ["true"] })
        )
        const missing = yield* call(client, "flotta_wait", { name: branchless.name, run: true })
        assert.strictEqual(errorOf(missing)._tag, "BranchNotFound")

        assert.deepStrictEqual(structured(yield* call(client, "flotta_worktrees", { cwd: repo })), { worktrees: [] })
        assert.deepStrictEqual(structured(yield* call(client, "flotta_gc_worktrees", { cwd: repo })), {
          removed: [],
          kept: []
        })
      }).pipe(Effect.provide(fakeFleet())))

    it.scopedLive("reports page by cursor, filtered by agent and kinds", () =>
      Effect.gen(function*() {
        const client = yield* session(era)
        yield* spawn(client, "first")
        yield* spawn(client, "second")
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
      }).pipe(Effect.provide(fakeFleet())))

    it.scopedLive("transcripts and the report log are readable as resources", () =>
      Effect.gen(function*() {
        const client = yield* session(era)
        yield* spawn(client, "reader")
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
      }).pipe(Effect.provide(fakeFleet())))
  })
}
