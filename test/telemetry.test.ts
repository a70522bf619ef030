/**
 * OpenTelemetry export, checked against a receiver the test runs (test/support/otlpReceiver.ts): what arrives is
 * decoded, and the spans' names, attributes and parent ids are checked.
 * - the library: a fleet over the in-memory Claude under `Otlp.layer`: turn, spawn, run, approval and restart
 *   spans; the turn's parent is the caller's span; the fleet's metrics arrive;
 * - the command: `flotta serve --simulate` with `telemetry.otlp`: an MCP tool call is the parent of its turn;
 *   `flotta run --simulate` exports its spans before it exits;
 * - the real CLI with `telemetry.children`: each child's environment (TRACEPARENT, OTEL_RESOURCE_ATTRIBUTES), and
 *   what Claude Code 2.1.332 itself exports: its `claude_code.interaction` spans hang under the span current
 *   when the process started (the spawn's), for every turn of the process, and its metrics carry the agent.
 */
import { NodeContext } from "@effect/platform-node"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Effect, Either, Layer, Stream } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as ConfigFile from "../packages/cli/src/ConfigFile.js"
import * as Flotta from "../packages/core/src/Flotta.js"
import * as Otlp from "../packages/core/src/Otlp.js"
import * as Testing from "../packages/core/src/Testing.js"
import { runFlotta } from "./support/cli.js"
import { type OtlpReceiver, type ReceivedSpan, spansNamed, startOtlpReceiver } from "./support/otlpReceiver.js"
import { CLAUDE, useOfflineApi, waitUntil } from "./support/realCli.js"
import { startServe } from "./support/serve.js"

const model: Testing.Model = ({ prompt }) => {
  if (prompt.startsWith("write ")) return Testing.toolUse("Write", { file_path: prompt.slice(6), content: "hi" })
  if (prompt === "crash") return Testing.crash({ exitCode: 3 })
  return `echo: ${prompt}`
}

const one = (spans: ReadonlyArray<ReceivedSpan>, what: string) => {
  assert.strictEqual(spans.length, 1, `expected one ${what} span, got ${spans.length}`)
  return spans[0]!
}

const parentOf = (receiver: OtlpReceiver, span: ReceivedSpan) =>
  receiver.spans.find((s) => s.spanId === span.parentSpanId && s.traceId === span.traceId)

/** The names of a span's ancestors, nearest first. */
const ancestry = (receiver: OtlpReceiver, span: ReceivedSpan): Array<string> => {
  const names: Array<string> = []
  for (let at = parentOf(receiver, span); at !== undefined; at = parentOf(receiver, at)) names.push(at.name)
  return names
}

const metricNames = (receiver: OtlpReceiver) => new Set(receiver.metrics.map((m) => m.name))

let dir: string
beforeAll(() => {
  dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "flotta-telemetry-")))
})
afterAll(() => {
  fs.rmSync(dir, { recursive: true, force: true })
})

/** A receiver for one test, closed when it ends. */
const withReceiver = <A>(test: (receiver: OtlpReceiver) => Promise<A>) => async () => {
  const receiver = await startOtlpReceiver()
  try {
    return await test(receiver)
  } finally {
    await receiver.close()
  }
}

describe("the library under Otlp.layer", () => {
  it.live("exports the turn, spawn, run, approval and restart spans, and the fleet's metrics", () =>
    Effect.acquireUseRelease(
      Effect.promise(startOtlpReceiver),
      (receiver) =>
        Effect.gen(function*() {
          const fleet = Testing.layer({ model, restartBackoff: "10 millis" }).pipe(
            Layer.provide(
              Otlp.layer({ otlp: receiver.url, serviceName: "fleet-test" }, { metricExportIntervalMs: 200 })
            )
          )
          yield* Effect.gen(function*() {
            const flotta = yield* Flotta.Flotta
            yield* flotta.spawn("alpha", { permission: { allow: ["Read"], ask: ["Write"] } })
            assert.strictEqual(yield* flotta.ask("alpha", "hello").pipe(Effect.withSpan("caller")), "echo: hello")
            // An approval, decided as soon as it is asked for.
            const approvals = yield* flotta.subscribeApprovals
            yield* approvals.pipe(
              Stream.take(1),
              Stream.runForEach((approval) => flotta.decide(approval.id, { behavior: "allow" })),
              Effect.fork
            )
            yield* flotta.ask("alpha", "write out.txt").pipe(Effect.withSpan("writer"))
            yield* flotta.run({ name: "once", prompt: "run me" })
            yield* flotta.ask("alpha", "crash").pipe(Effect.ignore)
            yield* flotta.ask("alpha", "after the crash")
          }).pipe(Effect.scoped, Effect.provide(fleet))

          // The layer has closed, and closing flushed everything.
          const turns = spansNamed(receiver, "flotta.turn")
          const caller = one(spansNamed(receiver, "caller"), "caller")
          const hello = one(turns.filter((s) => s.parentSpanId === caller.spanId), "turn under the caller")
          assert.strictEqual(hello.traceId, caller.traceId)
          assert.deepInclude(hello.attributes, {
            "flotta.agent": "alpha",
            "flotta.turn": "t1",
            "flotta.outcome": "ok",
            "flotta.model_calls": 1,
            "flotta.cost_usd": 0.001,
            "flotta.tokens.input": 10,
            "flotta.tokens.output": 5
          })
          assert.match(String(hello.attributes["flotta.session_id"]), /^[0-9a-f-]{36}$/)
          assert.strictEqual(hello.resource["service.name"], "fleet-test")

          const spawn = one(
            spansNamed(receiver, "flotta.spawn").filter((s) => s.attributes["flotta.agent"] === "alpha"),
            "spawn of alpha"
          )
          assert.strictEqual(spawn.attributes["flotta.restored"], false)

          // The approval waits inside the turn that asked for it.
          const approval = one(spansNamed(receiver, "flotta.approval"), "approval")
          assert.deepInclude(approval.attributes, {
            "flotta.agent": "alpha",
            "flotta.tool": "Write",
            "flotta.decision": "allow",
            "flotta.decided_by": "api"
          })
          assert.deepStrictEqual(ancestry(receiver, approval).slice(0, 3), [
            "Permission.decide",
            "flotta.turn",
            "writer"
          ])

          // A run: its spawn and its one turn are inside it.
          const run = one(spansNamed(receiver, "flotta.run"), "run")
          assert.strictEqual(run.attributes["flotta.run"], "once")
          const runTurn = one(turns.filter((s) => s.attributes["flotta.agent"] === "once"), "run's turn")
          assert.strictEqual(runTurn.parentSpanId, run.spanId)
          assert.include(
            ancestry(
              receiver,
              one(
                spansNamed(receiver, "flotta.spawn").filter((s) => s.attributes["flotta.agent"] === "once"),
                "spawn of once"
              )
            ),
            "flotta.run"
          )

          // A crash: the turn fails as AgentCrashed, and the restart is a trace of its own, linked to the spawn.
          assert.strictEqual(
            one(turns.filter((s) => s.attributes["flotta.turn"] === "t3"), "t3").attributes["flotta.outcome"],
            "AgentCrashed"
          )
          const restart = one(spansNamed(receiver, "flotta.restart"), "restart")
          assert.deepInclude(restart.attributes, { "flotta.agent": "alpha", "flotta.restart.attempt": 1 })
          assert.match(String(restart.attributes["flotta.restart.reason"]), /exit code 3/)
          assert.strictEqual(restart.parentSpanId, "")
          assert.deepStrictEqual(restart.links, [{ traceId: spawn.traceId, spanId: spawn.spanId }])
          assert.strictEqual(
            one(turns.filter((s) => s.attributes["flotta.turn"] === "t4"), "t4").attributes["flotta.outcome"],
            "ok"
          )

          // The fleet's metrics, as ARCHITECTURE.md names them.
          for (
            const name of [
              "flotta_turns_total",
              "flotta_turn_duration_ms",
              "flotta_cost_usd_total",
              "flotta_agents_live"
            ]
          ) {
            assert.isTrue(metricNames(receiver).has(name), `${name} was not exported`)
          }
          const turnsTotal = receiver.metrics.filter((m) => m.name === "flotta_turns_total").at(-1)!
          const okAlpha = turnsTotal.points.find((p) =>
            p.attributes["agent"] === "alpha" && p.attributes["outcome"] === "ok"
          )
          assert.strictEqual(okAlpha?.value, 3)
          const crashed = turnsTotal.points.find((p) => p.attributes["outcome"] === "AgentCrashed")
          assert.strictEqual(crashed?.value, 1)
        }),
      (receiver) => Effect.promise(() => receiver.close())
    ))
})

describe("the config's telemetry section", () => {
  it("decodes, and a bad field is reported with its path", () => {
    const ok = ConfigFile.decode("flotta.config.json", {
      telemetry: { otlp: "http://127.0.0.1:4318", children: true, headers: { "x-key": "k" } }
    }, dir)
    assert.isTrue(Either.isRight(ok))
    assert.deepStrictEqual(Either.getOrThrow(ok).telemetry, {
      otlp: "http://127.0.0.1:4318",
      children: true,
      headers: { "x-key": "k" }
    })
    assert.isUndefined(Either.getOrThrow(ConfigFile.decode("flotta.config.json", {}, dir)).telemetry)
    const bad = (telemetry: unknown) => {
      const decoded = ConfigFile.decode("flotta.config.json", { telemetry }, dir)
      return Either.isLeft(decoded) ? decoded.left.message : "decoded"
    }
    assert.match(
      bad({ otlp: "127.0.0.1:4318" }),
      /^flotta\.config\.json: telemetry\.otlp: expected an http:\/\/ or https:\/\/ URL/
    )
    assert.match(bad({ children: "yes" }), /telemetry\.children: expected true or false, got "yes"/)
    assert.match(bad({ headers: { a: 1 } }), /telemetry\.headers\.a: expected a string, got 1/)
    assert.match(bad({ otlp: "http://x", endpoint: "y" }), /telemetry\.endpoint: unknown field; expected one of otlp/)
  })
})

const writeConfig = (project: string, config: unknown) => {
  fs.mkdirSync(project, { recursive: true })
  fs.writeFileSync(path.join(project, "flotta.config.json"), JSON.stringify(config))
}

describe("the flotta command with telemetry.otlp", () => {
  it(
    "serve: an MCP tool call is the parent of its turn, and SIGTERM flushes what is buffered",
    withReceiver(async (receiver) => {
      const config = { agents: [{ name: "scout" }], telemetry: { otlp: receiver.url } }
      const served = await startServe(path.join(dir, "served"), { config })
      const asked = await served.flotta("ask", "scout", "ECHO traced")
      // SIGTERM: the serve flushes what it buffered, and ends cleanly.
      const exit = await served.stop()
      assert.strictEqual(asked.code, 0, asked.stderr)
      assert.strictEqual(exit, 0, served.out.stderr)
      const turn = one(spansNamed(receiver, "flotta.turn"), "turn")
      assert.deepInclude(turn.attributes, { "flotta.agent": "scout", "flotta.outcome": "ok", "flotta.model_calls": 1 })
      const tool = parentOf(receiver, turn)
      assert.strictEqual(tool?.name, "mcp.flotta_ask")
      assert.strictEqual(tool?.attributes["mcp.tool"], "flotta_ask")
      assert.strictEqual(turn.resource["service.name"], "flotta")
      assert.isTrue(spansNamed(receiver, "flotta.spawn").some((s) => s.attributes["flotta.agent"] === "scout"))
      assert.isTrue(metricNames(receiver).has("flotta_turns_total"))
    }),
    120_000
  )

  it(
    "run, with children: the run's spans arrive before it exits, and the CLI's own spans nest under its spawn",
    withReceiver(async (receiver) => {
      const project = path.join(dir, "run")
      writeConfig(project, { telemetry: { otlp: receiver.url, children: true } })
      const ran = await runFlotta(project, ["run", "--simulate", "--name", "traced-run", "READ /etc/hostname"])
      assert.strictEqual(ran.code, 0, ran.stderr)
      const run = one(spansNamed(receiver, "flotta.run"), "run")
      const turn = one(spansNamed(receiver, "flotta.turn"), "turn")
      assert.strictEqual(turn.parentSpanId, run.spanId)
      assert.strictEqual(turn.attributes["flotta.model_calls"], 2)
      const spawn = one(spansNamed(receiver, "flotta.spawn"), "spawn")
      // The CLI exports as it exits, after flotta's own flush may have begun: wait for its interaction span.
      await waitUntil(() => spansNamed(receiver, "claude_code.interaction").length > 0, 20_000, "the CLI's spans")
      const interaction = one(spansNamed(receiver, "claude_code.interaction"), "CLI interaction")
      assert.strictEqual(interaction.traceId, run.traceId)
      assert.strictEqual(interaction.parentSpanId, spawn.spanId)
      assert.strictEqual(interaction.attributes["parent.source"], "env")
      assert.strictEqual(interaction.attributes["session.id"], turn.attributes["flotta.session_id"])
      assert.strictEqual(interaction.resource["flotta.agent"], "traced-run")
      assert.strictEqual(interaction.resource["service.name"], "claude-code")
      // Below it: a span per model call and per tool call (2.1.332), in the same trace.
      const under = receiver.spans.filter((s) => s.parentSpanId === interaction.spanId).map((s) => s.name)
      assert.includeMembers(under, ["claude_code.llm_request", "claude_code.tool"])
    }),
    120_000
  )
})

const offline = useOfflineApi("flotta-telemetry")

describe("the real CLI with telemetry.children", () => {
  it.live(
    "each child gets TRACEPARENT (its spawn's span) and its agent; every turn of the process hangs under the spawn",
    () =>
      Effect.acquireUseRelease(
        Effect.promise(startOtlpReceiver),
        (receiver) =>
          Effect.gen(function*() {
            const fleet = Flotta.layer({ claudePath: CLAUDE }).pipe(
              Layer.provide(NodeContext.layer),
              Layer.provide(Otlp.layer({ otlp: receiver.url, children: true, headers: { "x-team": "fleet a" } }))
            )
            const environ = yield* Effect.gen(function*() {
              const flotta = yield* Flotta.Flotta
              const info = yield* flotta.spawn("kid", {
                cwd: offline.workdir("kid"),
                // The CLI's own metrics every second, so a short test sees them before the process exits.
                env: { ...offline.env, OTEL_METRIC_EXPORT_INTERVAL: "1000" }
              })
              const environ = fs.readFileSync(`/proc/${info.pid}/environ`, "utf8").split("\0")
              yield* flotta.ask("kid", "ECHO one").pipe(Effect.withSpan("first"))
              yield* flotta.ask("kid", "ECHO two").pipe(Effect.withSpan("second"))
              return environ
            }).pipe(Effect.scoped, Effect.provide(fleet))

            const spawn = one(spansNamed(receiver, "flotta.spawn"), "spawn")
            const env = Object.fromEntries(
              environ.map((line) => [line.slice(0, line.indexOf("=")), line.slice(line.indexOf("=") + 1)])
            )
            assert.deepInclude(env, {
              TRACEPARENT: `00-${spawn.traceId}-${spawn.spanId}-01`,
              CLAUDE_CODE_ENABLE_TELEMETRY: "1",
              CLAUDE_CODE_ENHANCED_TELEMETRY_BETA: "1",
              OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
              OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${receiver.url}/v1/traces`,
              OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
              OTEL_TRACES_EXPORTER: "otlp",
              OTEL_METRICS_EXPORTER: "otlp",
              OTEL_LOGS_EXPORTER: "otlp",
              OTEL_EXPORTER_OTLP_HEADERS: "x-team=fleet%20a",
              // The offline environment stays: it does not stop the CLI's telemetry (measured).
              CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1"
            })
            assert.match(env["OTEL_RESOURCE_ATTRIBUTES"]!, /(^|,)flotta\.agent=kid$/)

            // The CLI flushes as it exits (EOF when the fleet closed): both turns' interaction spans arrive, and
            // both hang under the spawn's span, not under their own turns: TRACEPARENT is read once per process.
            yield* Effect.promise(() =>
              waitUntil(() => spansNamed(receiver, "claude_code.interaction").length >= 2, 20_000, "the CLI's spans")
            )
            const interactions = spansNamed(receiver, "claude_code.interaction")
            assert.deepStrictEqual(interactions.map((s) => s.parentSpanId), [spawn.spanId, spawn.spanId])
            assert.deepStrictEqual(interactions.map((s) => s.traceId), [spawn.traceId, spawn.traceId])
            const turns = spansNamed(receiver, "flotta.turn")
            assert.deepStrictEqual(
              turns.map((t) => parentOf(receiver, t)?.name).sort(),
              ["first", "second"],
              "flotta's own turns nest under their callers"
            )
            assert.deepStrictEqual(
              [...new Set(interactions.map((s) => s.attributes["session.id"]))],
              [turns[0]!.attributes["flotta.session_id"]],
              "the session id joins the CLI's spans to the fleet's turns"
            )
            assert.deepStrictEqual(interactions.map((s) => s.attributes["interaction.sequence"]).sort(), [1, 2])
            for (const span of interactions) assert.strictEqual(span.resource["flotta.agent"], "kid")
            // Its metrics and log events arrive too, as JSON.
            yield* Effect.promise(() =>
              waitUntil(() => metricNames(receiver).has("claude_code.token.usage"), 20_000, "the CLI's metrics")
            )
            assert.isTrue(
              receiver.metrics.some((m) => m.name === "claude_code.token.usage" && m.resource["flotta.agent"] === "kid")
            )
            assert.isAbove(receiver.logs.length, 0)
            assert.deepStrictEqual(receiver.protobuf, {})
            assert.isTrue(
              receiver.requests.filter((r) => r.path === "/v1/traces").length > 0 &&
                receiver.requests.every((r) => r.contentType.startsWith("application/json"))
            )
          }),
        (receiver) => Effect.promise(() => receiver.close())
      ),
    120_000
  )
})
