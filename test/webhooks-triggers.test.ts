/**
 * Triggers over a real socket: the MCP server on 127.0.0.1 with the webhooks' routes mounted beside `/mcp`, over
 * the in-memory fleet and a real scheduler. `POST /hooks/routines/NAME` needs the token (or the routine's secret);
 * `POST /hooks/github` takes GitHub's signed deliveries (payloads in GitHub's shapes, test/fixtures/github), fires
 * what the config maps, and nothing for a tampered body, a redelivery or an unmapped event.
 */
import { assert, describe, it } from "@effect/vitest"
import { Flotta } from "@flotta/core/Flotta"
import { ReportLog } from "@flotta/core/ReportLog"
import * as Testing from "@flotta/core/Testing"
import * as McpServer from "@flotta/mcp/McpServer"
import { Scheduler } from "@flotta/scheduler/Scheduler"
import * as SchedulerConfig from "@flotta/scheduler/SchedulerConfig"
import * as Delivery from "@flotta/webhooks/Delivery"
import * as Webhooks from "@flotta/webhooks/Webhooks"
import type { GithubSection } from "@flotta/webhooks/WebhooksConfig"
import { Effect, Either, Layer, Option } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { waitFor } from "./support/waiting.js"

const TOKEN = "server-token-0123456789"
const ROUTINE_SECRET = "routine-secret-0123456789"
const GITHUB_SECRET = "github-secret-0123456789"
const fixture = (name: string) =>
  fs.readFileSync(path.join(import.meta.dirname, "fixtures", "github", `${name}.json`), "utf8")

const always = [["00:00", "24:00"]]
const schedule = (() => {
  const read = SchedulerConfig.read({
    schedule: {
      timezone: "utc",
      hours: { mon: always, tue: always, wed: always, thu: always, fri: always, sat: always, sun: always }
    },
    routines: [
      { name: "fix-ci", action: "run", prompt: "Fix the failing check.\n{{event}}" },
      { name: "nightly", action: "run", prompt: "Tidy up.", secret: ROUTINE_SECRET }
    ]
  })
  if (Either.isLeft(read) || Option.isNone(read.right)) throw new Error("the test's schedule does not decode")
  return read.right.value
})()

const github: GithubSection = {
  secret: GITHUB_SECRET,
  maxBodyBytes: 64 * 1024,
  on: [
    { event: "check_run.completed", conclusion: "failure", routine: "fix-ci" },
    { event: "issues.labeled", label: "flotta", run: "issue-runner" }
  ]
}

/** Every prompt the model was given, in order. */
const prompts: Array<string> = []

const layer = McpServer.layer({ port: 0, token: TOKEN }).pipe(
  Layer.provideMerge(Webhooks.layer({ github })),
  Layer.provideMerge(Scheduler.layer(schedule)),
  Layer.provideMerge(Testing.layer({
    model: ({ prompt }) => {
      prompts.push(prompt)
      return "done"
    }
  }))
)

interface Answer {
  readonly status: number
  readonly body:
    & { readonly ok: boolean; readonly fireId?: string; readonly error?: { _tag: string } }
    & Record<
      string,
      unknown
    >
}

const post = (url: string, body: string, headers: Record<string, string>) =>
  Effect.promise(async (): Promise<Answer> => {
    const response = await fetch(url, {
      method: "POST",
      body,
      headers: { "content-type": "application/json", ...headers }
    })
    return { status: response.status, body: (await response.json()) as Answer["body"] }
  })

const hooks = Effect.map(McpServer.McpServer, (server) => new URL("/hooks/", server.url).href)

const deliver = (event: string, body: string, delivery: string, signed = body) =>
  Effect.flatMap(hooks, (base) =>
    post(`${base}github`, body, {
      "x-github-event": event,
      "x-github-delivery": delivery,
      "x-hub-signature-256": Delivery.signature(GITHUB_SECRET, signed)
    }))

const fires = Effect.flatMap(
  ReportLog,
  (log) => Effect.map(log.reports({ agent: "scheduler", kinds: ["fire"] }), (page) => page.entries)
)

describe("triggers", () => {
  it.live("a routine fires by POST only with the token or its secret, once, with the body in its prompt", () =>
    Effect.gen(function*() {
      yield* (yield* Flotta).boot({ agents: [] })
      const base = yield* hooks
      const bare = yield* post(`${base}routines/fix-ci`, "{}", {})
      assert.strictEqual(bare.status, 401)
      const wrong = yield* post(`${base}routines/fix-ci`, "{}", { authorization: `Bearer ${ROUTINE_SECRET}` })
      assert.strictEqual(wrong.status, 401, "another routine's secret is not this one's")
      const foreign = yield* post(`${base}routines/fix-ci`, "{}", {
        authorization: `Bearer ${TOKEN}`,
        origin: "https://evil.example"
      })
      assert.strictEqual(foreign.status, 403)
      assert.strictEqual((yield* fires).length, 0, "nothing fired")

      const fired = yield* post(`${base}routines/fix-ci`, JSON.stringify({ reason: "deploy 42 broke" }), {
        authorization: `Bearer ${TOKEN}`
      })
      assert.strictEqual(fired.status, 202)
      assert.match(fired.body.fireId!, /^fire-/)
      const [fire] = yield* waitFor(fires, (entries) => entries.length === 1, "the fire")
      assert.strictEqual((fire!.data as { trigger: string }).trigger, "webhook")
      yield* waitFor(Effect.sync(() => prompts.some((p) => p.includes("deploy 42 broke"))), (ok) => ok, "the prompt")

      const bySecret = yield* post(`${base}routines/nightly`, "", { authorization: `Bearer ${ROUTINE_SECRET}` })
      assert.strictEqual(bySecret.status, 202)
      const missing = yield* post(`${base}routines/nope`, "", { authorization: `Bearer ${TOKEN}` })
      assert.strictEqual(missing.status, 404)
      assert.strictEqual(missing.body.error!._tag, "RoutineNotFound")
      const notJson = yield* post(`${base}routines/nightly`, "{", { authorization: `Bearer ${TOKEN}` })
      assert.strictEqual(notJson.status, 400)
      assert.strictEqual((yield* fires).length, 2, "fired once each")
    }).pipe(Effect.provide(layer), Effect.scoped))

  it.live("GitHub: a signed check_run failure fires its routine with the check's name; tampered and repeated fire nothing", () =>
    Effect.gen(function*() {
      yield* (yield* Flotta).boot({ agents: [] })
      const log = yield* ReportLog
      const body = fixture("check_run.completed")
      const tampered = body.replace("failure", "success")
      const refused = yield* deliver("check_run", tampered, "d-1", body)
      assert.strictEqual(refused.status, 401)
      assert.strictEqual((yield* fires).length, 0)

      const taken = yield* deliver("check_run", body, "d-2")
      assert.strictEqual(taken.status, 202)
      assert.strictEqual((taken.body["fired"] as Array<{ routine: string }>)[0]!.routine, "fix-ci")
      yield* waitFor(
        Effect.sync(() => prompts.filter((p) => p.includes("Fix the failing check.") && p.includes("check_run"))),
        (found) => found.length === 1 && found[0]!.includes("\"test (20.x)\"") && found[0]!.includes("failure"),
        "the check's name in the routine's prompt"
      )
      const again = yield* deliver("check_run", body, "d-2")
      assert.strictEqual(again.status, 200)
      assert.strictEqual(again.body["duplicate"], true)
      assert.strictEqual((yield* fires).length, 1, "a redelivery fires nothing")

      const unmapped = yield* deliver("push", "{\"ref\":\"refs/heads/main\"}", "d-3")
      assert.strictEqual(unmapped.status, 202)
      assert.strictEqual(unmapped.body["unmapped"], true)
      const big = yield* deliver("check_run", JSON.stringify({ pad: "x".repeat(70 * 1024) }), "d-4")
      assert.strictEqual(big.status, 413)

      const triggers = (yield* log.reports({ agent: "hooks", kinds: ["trigger", "trigger_refused"] })).entries
      assert.deepStrictEqual(
        triggers.map((e) => [e.kind, (e.data as { delivery?: string }).delivery]),
        [
          ["trigger_refused", "d-1"],
          ["trigger", "d-2"],
          ["trigger", "d-2"],
          ["trigger", "d-3"],
          ["trigger_refused", undefined]
        ]
      )
    }).pipe(Effect.provide(layer), Effect.scoped))

  it.live("GitHub: an issue labeled for flotta starts the mapped run template with the issue in its prompt", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      yield* fleet.boot({ agents: [{ name: "issue-runner", lifecycle: "run", prompt: "Work on this issue." }] })
      const answer = yield* deliver("issues", fixture("issues.labeled"), "d-10")
      assert.strictEqual(answer.status, 202)
      const [started] = answer.body["fired"] as Array<{ run: string; name: string }>
      assert.strictEqual(started!.run, "issue-runner")
      const result = yield* fleet.runResult(started!.name).pipe(
        Effect.retry({ while: (e) => e._tag === "TurnPending", times: 200 })
      )
      assert.strictEqual(result.kind, "run")
      const prompt = prompts.find((p) => p.startsWith("Work on this issue."))
      assert.include(prompt, "Issue #1347: Spelling error in the README file")
      const other = yield* deliver("issues", fixture("issues.labeled").replaceAll("\"flotta\"", "\"bug\""), "d-11")
      assert.strictEqual(other.status, 202)
      assert.deepStrictEqual(other.body["fired"], [])
    }).pipe(Effect.provide(layer), Effect.scoped))
})
