/**
 * The dashboard's server on a real loopback port over the in-memory fleet: the guards (Host, Origin, token and
 * its cookie), the actions behind the buttons, and the event stream's replay by cursor. Timers run on the
 * TestClock; a socket is the only real thing here.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Testing from "@flotta/core/Testing"
import { Deferred, Effect, Exit, Fiber, Option } from "effect"
import * as http from "node:http"
import * as DashboardConfig from "../src/DashboardConfig.js"
import { serveOver } from "./support.js"

const TOKEN = "dashboard-token-0123456789"

const model: Testing.Model = ({ prompt }) =>
  prompt.startsWith("write ")
    ? Testing.toolUse("Write", { file_path: prompt.slice(6), content: "x" })
    : `echo: ${prompt}`

interface Reply {
  readonly status: number
  readonly headers: http.IncomingHttpHeaders
  readonly body: string
}

/** One raw request (node:http, so Host and Origin can be anything). */
const request = (
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: string } = {}
) =>
  Effect.async<Reply, Error>((resume) => {
    const req = http.request(
      url,
      { method: options.method ?? "GET", agent: false, headers: options.headers ?? {} },
      (res) => {
        let text = ""
        res.setEncoding("utf8")
        res.on("data", (chunk: string) => (text += chunk))
        res.on("end", () => resume(Effect.succeed({ status: res.statusCode ?? 0, headers: res.headers, body: text })))
      }
    )
    req.on("error", (error) => resume(Effect.fail(error)))
    req.end(options.body)
  })

/** A form POST from the dashboard's own page (its Origin), asking for JSON. */
const post = (base: string, path: string, fields: Record<string, string> = {}, headers: Record<string, string> = {}) =>
  request(`${base}${path}`, {
    method: "POST",
    headers: {
      origin: base,
      accept: "application/json",
      "content-type": "application/x-www-form-urlencoded",
      ...headers
    },
    body: new URLSearchParams(fields).toString()
  })

/** Reads an event stream until `enough` holds for the events seen, then closes it. */
const events = (
  url: string,
  headers: Record<string, string>,
  enough: (ids: Array<number>) => boolean,
  opened?: Deferred.Deferred<void>
) =>
  Effect.async<{ ids: Array<number>; kinds: Array<string>; raw: string }, Error>((resume) => {
    const req = http.request(url, { agent: false, headers }, (res) => {
      let raw = ""
      res.setEncoding("utf8")
      res.on("data", (chunk: string) => {
        raw += chunk
        // The server subscribes before its first line: from here on, nothing posted is missed.
        if (opened !== undefined && raw.startsWith("retry:")) Deferred.unsafeDone(opened, Exit.void)
        const blocks = raw.split("\n\n").filter((b) => b.includes("event: entry"))
        const ids = blocks.map((b) => Number(/^id: (\d+)$/m.exec(b)?.[1]))
        const kinds = blocks.map((b) => (JSON.parse(/^data: (.*)$/m.exec(b)![1]!) as { kind: string }).kind)
        if (enough(ids)) {
          req.destroy()
          resume(Effect.succeed({ ids, kinds, raw }))
        }
      })
    })
    req.on("error", (error) => resume(Effect.fail(error)))
    req.end()
  })

const serve = (config: DashboardConfig.DashboardConfigInput = {}) => serveOver(Testing.layer({ model }), config)

describe("the dashboard's server", () => {
  it.scoped("serves its pages to its own host, and refuses other Hosts and foreign Origins", () =>
    Effect.gen(function*() {
      const { base } = yield* serve()
      const page = yield* request(`${base}/`)
      assert.strictEqual(page.status, 200)
      assert.match(page.headers["content-type"] ?? "", /text\/html/)
      assert.match(String(page.headers["content-security-policy"]), /script-src 'self'/)
      const rebound = yield* request(`${base}/`, { headers: { host: "evil.example:80" } })
      assert.strictEqual(rebound.status, 403)
      assert.match(rebound.body, /evil\.example/)
      const foreign = yield* request(`${base}/events`, { headers: { origin: "http://evil.example" } })
      assert.strictEqual(foreign.status, 403)
      // Another port on the same machine is another origin: same-site for cookies, so it is refused too.
      const otherPort = yield* request(`${base}/`, { headers: { origin: "http://127.0.0.1:1" } })
      assert.strictEqual(otherPort.status, 403)
    }))

  it.scoped("runs an action only for a POST from its own page", () =>
    Effect.gen(function*() {
      const { base, fleet } = yield* serve()
      yield* fleet.spawn("scout")
      const foreign = yield* post(base, "/agents/scout/prompt", { text: "hi" }, { origin: "http://evil.example" })
      assert.strictEqual(foreign.status, 403)
      const noOrigin = yield* request(`${base}/agents/scout/prompt`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: "text=hi"
      })
      assert.strictEqual(noOrigin.status, 403)
      assert.strictEqual((yield* fleet.transcript("scout")).length, 0)

      const sent = yield* post(base, "/agents/scout/prompt", { text: "hello there" })
      assert.strictEqual(sent.status, 200)
      const { result } = JSON.parse(sent.body) as { result: { turnId: string } }
      assert.strictEqual(
        yield* Effect.flatMap(fleet.result("scout", result.turnId), (r) => Effect.succeed(r.text)),
        "echo: hello there"
      )

      // A plain form (no script) is sent back to the page it came from.
      const form = yield* request(`${base}/agents/scout/interrupt`, {
        method: "POST",
        headers: { origin: base, referer: `${base}/agents/scout`, "content-type": "application/x-www-form-urlencoded" }
      })
      assert.strictEqual(form.status, 303)
      assert.strictEqual(form.headers.location, "/agents/scout")
    }))

  it.scoped("forks an agent from the Fork form, by the name it asks for", () =>
    Effect.gen(function*() {
      const { base, fleet } = yield* serve()
      yield* fleet.spawn("scout")
      yield* fleet.ask("scout", "one")
      yield* fleet.ask("scout", "two")
      const forked = yield* post(base, "/agents/scout/fork", { name: "twin", at: "t1" })
      assert.strictEqual(forked.status, 200, forked.body)
      const { result } = JSON.parse(forked.body) as { result: { name: string; forkedFrom: { turnId: string } } }
      assert.deepStrictEqual([result.name, result.forkedFrom.turnId], ["twin", "t1"])
      assert.strictEqual((yield* fleet.info("twin")).forkedFrom?.agent, "scout")
      const latest = yield* post(base, "/agents/scout/fork", { name: "later", at: "" })
      assert.strictEqual(JSON.parse(latest.body).result.forkedFrom.turnId, "t2", "no turn: the last one")
      for (
        const [fields, status, tag] of [
          [{}, 400, "BadAction"],
          [{ name: "twin" }, 409, "AgentAlreadyExists"],
          [{ name: "other", at: "t9" }, 409, "NoResult"]
        ] as const
      ) {
        const reply = yield* post(base, "/agents/scout/fork", fields)
        assert.strictEqual(reply.status, status, reply.body)
        assert.strictEqual(JSON.parse(reply.body).error._tag, tag)
      }
    }))

  it.scoped("compacts and clears a session from its buttons: each a turn queued next", () =>
    Effect.gen(function*() {
      const { base, fleet } = yield* serve()
      yield* fleet.spawn("scout")
      yield* fleet.ask("scout", "remember this")
      const before = (yield* fleet.info("scout")).sessionId
      const compacted = yield* post(base, "/agents/scout/compact", { instructions: "keep it" })
      const { turnId } = JSON.parse(compacted.body).result as { turnId: string }
      assert.isDefined((yield* fleet.wait("scout", turnId)).compaction)
      assert.strictEqual((yield* fleet.transcript("scout")).at(-1)?.prompt, "/compact keep it")
      const cleared = yield* post(base, "/agents/scout/clear")
      const done = yield* fleet.wait("scout", (JSON.parse(cleared.body).result as { turnId: string }).turnId)
      assert.notStrictEqual(done.sessionId, before)
      assert.strictEqual((yield* fleet.transcript("scout")).at(-1)?.marks?.[0]?._tag, "Cleared")
    }))

  it.scoped("hibernates and wakes a session from its buttons", () =>
    Effect.gen(function*() {
      const { base, fleet } = yield* serve()
      yield* fleet.spawn("scout")
      const slept = yield* post(base, "/agents/scout/hibernate")
      assert.strictEqual(slept.status, 200, slept.body)
      assert.deepStrictEqual(JSON.parse(slept.body).result, { hibernated: true })
      assert.strictEqual((yield* fleet.status("scout")).status, "hibernated")
      const woke = yield* post(base, "/agents/scout/wake")
      assert.deepStrictEqual(JSON.parse(woke.body).result, { woken: true })
      assert.strictEqual((yield* fleet.status("scout")).status, "idle")
    }))

  it.scoped("names what was wrong with an action", () =>
    Effect.gen(function*() {
      const { base, fleet } = yield* serve()
      yield* fleet.spawn("old")
      yield* fleet.close("old")
      const closed = yield* post(base, "/agents/old/prompt", { text: "hi" })
      assert.strictEqual(closed.status, 404)
      assert.match(JSON.parse(closed.body).error.message, /^agent "old" was closed at \S+ \(closed by request\)/)
      const cases: Array<[string, Record<string, string>, number, string]> = [
        ["/agents/ghost/prompt", { text: "hi" }, 404, "AgentNotFound"],
        ["/agents/ghost/prompt", {}, 400, "BadAction"],
        ["/approvals/ap_nothing/approve", {}, 404, "ApprovalNotFound"],
        ["/schedule/pause", {}, 409, "SchedulerNotEnabled"],
        ["/nowhere", {}, 404, "BadAction"]
      ]
      for (const [path, fields, status, tag] of cases) {
        const reply = yield* post(base, path, fields)
        assert.strictEqual(reply.status, status, `${path}: ${reply.body}`)
        const body = JSON.parse(reply.body) as { ok: boolean; error: { _tag: string; message: string } }
        assert.strictEqual(body.ok, false)
        assert.strictEqual(body.error._tag, tag, path)
        assert.isAbove(body.error.message.length, 0)
      }
    }))

  it.scoped("decides a waiting tool call from the Approve button", () =>
    Effect.gen(function*() {
      const { base, fleet } = yield* serve()
      yield* fleet.spawn("writer", { permission: { allow: ["Read"], ask: ["Write"] } })
      const turnId = yield* fleet.prompt("writer", "write notes.md")
      const pending = yield* fleet.approvals().pipe(
        Effect.repeat({ until: (list) => list.length > 0 })
      )
      const approved = yield* post(base, `/approvals/${pending[0]!.id}/approve`, { message: "go ahead" })
      assert.strictEqual(approved.status, 200, approved.body)
      const result = yield* fleet.result("writer", turnId).pipe(Effect.eventually)
      assert.strictEqual(result.text, "Write done")
      const [ended] = (yield* fleet.approvals({ all: true })).filter((a) => a.id === pending[0]!.id)
      assert.strictEqual(ended?.decidedBy, "dashboard")
    }))

  it.scoped("with a token, asks for it once and then holds it in an HttpOnly, SameSite=Strict cookie", () =>
    Effect.gen(function*() {
      const { base } = yield* serve({ token: TOKEN })
      const anonymous = yield* request(`${base}/`)
      assert.strictEqual(anonymous.status, 401)
      assert.match(anonymous.body, /<form[^>]*action="\/login"/)
      assert.strictEqual((yield* request(`${base}/events`)).status, 401)
      assert.strictEqual((yield* request(`${base}/?token=wrong-token-0000000000`)).status, 401)

      const first = yield* request(`${base}/reports?token=${TOKEN}&kind=result`)
      assert.strictEqual(first.status, 303)
      assert.strictEqual(first.headers.location, "/reports?kind=result")
      const cookie = String(first.headers["set-cookie"])
      assert.match(cookie, /HttpOnly/)
      assert.match(cookie, /SameSite=Strict/)
      assert.notInclude(cookie, TOKEN)
      const session = cookie.split(";", 1)[0]!
      assert.strictEqual((yield* request(`${base}/`, { headers: { cookie: session } })).status, 200)
      assert.strictEqual((yield* request(`${base}/`, { headers: { authorization: `Bearer ${TOKEN}` } })).status, 200)

      const login = yield* post(base, "/login", { token: TOKEN, next: "/approvals" })
      assert.strictEqual(login.status, 303)
      assert.strictEqual(login.headers.location, "/approvals")
      const badLogin = yield* post(base, "/login", { token: "nope" })
      assert.strictEqual(badLogin.status, 401)

      // An action needs the session too, even from the page's own origin.
      assert.strictEqual((yield* post(base, "/schedule/pause")).status, 401)
      assert.strictEqual((yield* post(base, "/schedule/pause", {}, { cookie: session })).status, 409)
    }))

  it.effect("refuses settings that would expose the fleet", () =>
    Effect.gen(function*() {
      const open = yield* Effect.exit(DashboardConfig.make({ host: "0.0.0.0" }))
      assert.isTrue(Exit.isFailure(open))
      assert.match(String(Exit.isFailure(open) && open.cause), /no token is configured/)
      const hostWithoutPort = yield* Effect.exit(
        DashboardConfig.make({ host: "0.0.0.0", token: TOKEN }, {
          host: "127.0.0.1",
          token: Option.none(),
          allowedHosts: [],
          allowedOrigins: []
        })
      )
      assert.isTrue(Exit.isFailure(hostWithoutPort))
      const inherited = yield* DashboardConfig.make({}, {
        host: "10.0.0.5",
        token: Option.none(),
        allowedHosts: [],
        allowedOrigins: []
      }).pipe(Effect.flip)
      assert.match(inherited.message, /10\.0\.0\.5/)
    }))

  it.scoped("streams the report log and replays what a client missed, by cursor, once each", () =>
    Effect.gen(function*() {
      const { base, fleet } = yield* serve()
      yield* fleet.spawn("scout")
      yield* fleet.ask("scout", "one")
      const before = (yield* fleet.reports({ last: 1 })).next
      yield* fleet.ask("scout", "two")
      yield* fleet.ask("scout", "three")
      const missed = (yield* fleet.reports({ since: before, limit: 100 })).entries.map((e) => e.seq)
      assert.isAbove(missed.length, 2)

      const replayed = yield* events(
        `${base}/events`,
        { "last-event-id": String(before) },
        (ids) => ids.length >= missed.length
      )
      assert.deepStrictEqual(replayed.ids, missed)
      assert.match(replayed.raw, /^retry: \d+/)
      const bySince = yield* events(`${base}/events?since=${missed[1]}`, {}, (ids) => ids.length >= missed.length - 2)
      assert.deepStrictEqual(bySince.ids, missed.slice(2))

      // Live after the replay: a new turn's entries follow, each once, in order.
      const last = missed[missed.length - 1]!
      const live = yield* Effect.fork(
        events(`${base}/events?since=${last}`, {}, (ids) => ids.length >= 2)
      )
      yield* fleet.ask("scout", "four")
      const after = yield* Fiber.join(live)
      assert.isTrue(after.ids.every((id, i) => id > last && (i === 0 || id > after.ids[i - 1]!)))
      assert.includeMembers(after.kinds, ["turn_started", "result"])
      // Each entry comes with its line for the reports table, by the server's rules: the page has none of its own.
      const frames = after.raw.split("\n\n").filter((b) => b.includes("event: entry"))
        .map((b) => JSON.parse(/^data: (.*)$/m.exec(b)![1]!) as { kind: string; summary?: unknown })
      assert.strictEqual(frames.find((f) => f.kind === "turn_started")?.summary, "four")
    }))

  it.scoped("answers 405 with Allow for a method a route does not take, and 404 for a path that is no route", () =>
    Effect.gen(function*() {
      const { base } = yield* serve()
      // [method, path, status, Allow]
      const table: Array<[string, string, number, string?]> = [
        ["TRACE", "/", 405, "GET, HEAD"],
        ["PUT", "/", 405, "GET, HEAD"],
        ["OPTIONS", "/reports", 405, "GET, HEAD"],
        ["DELETE", "/agents/scout", 405, "GET, HEAD"],
        ["POST", "/events", 405, "GET, HEAD"],
        ["PUT", "/login", 405, "GET, POST"],
        ["GET", "/schedule/pause", 405, "POST"],
        ["POST", "/runs", 405, "GET, HEAD"],
        ["GET", "/runs", 200],
        ["GET", "/runs?state=unknown", 400],
        ["GET", "/runs/nothing", 404],
        ["TRACE", "/agents/scout/prompt", 405, "POST"],
        ["HEAD", "/", 200],
        ["GET", "/nowhere", 404],
        ["TRACE", "/nowhere", 404],
        ["PUT", "/mcp/anything", 404],
        ["GET", "/agents/scout/more/parts", 404],
        ["POST", "/schedule/nothing", 404]
      ]
      for (const [method, path, status, allow] of table) {
        const reply = yield* request(`${base}${path}`, {
          method,
          headers: method === "POST" ? { origin: base, accept: "application/json" } : {}
        })
        assert.strictEqual(reply.status, status, `${method} ${path}: ${reply.body}`)
        assert.strictEqual(reply.headers["allow"], allow, `${method} ${path}`)
      }
    }))

  it.scoped("refuses forged cookies, traversal, bad event cursors and oversized bodies", () =>
    Effect.gen(function*() {
      const { base, fleet } = yield* serve({ token: TOKEN })
      const auth = { authorization: `Bearer ${TOKEN}` }
      for (const cookie of ["flotta_session=forged", `flotta_session=${TOKEN}`, "flotta_session=", "other=1"]) {
        assert.strictEqual((yield* request(`${base}/api/charts`, { headers: { cookie } })).status, 401, cookie)
      }
      // The cookie is not a bearer: an action without an Origin needs the header.
      const first = yield* request(`${base}/?token=${TOKEN}`)
      const session = String(first.headers["set-cookie"]).split(";", 1)[0]!
      const cookieOnly = yield* request(`${base}/schedule/pause`, { method: "POST", headers: { cookie: session } })
      assert.strictEqual(cookieOnly.status, 403)
      for (const path of ["/assets/..%2F..%2Fpackage.json", "/assets/../../package.json", "/assets/%2e%2e%2fapp.js"]) {
        const reply = yield* request(`${base}${path}`, { headers: auth })
        assert.strictEqual(reply.status, 404, path)
        assert.notInclude(reply.body, "\"name\"")
      }
      // A cursor that is not a whole number is no cursor: the stream starts live, replaying nothing.
      yield* fleet.spawn("scout")
      yield* fleet.ask("scout", "one")
      for (const cursor of ["-1", "1e3", "0x10", "abc", "1.5", " "]) {
        const before = (yield* fleet.reports({ last: 1 })).next
        const opened = yield* Deferred.make<void>()
        const stream = yield* Effect.fork(
          events(`${base}/events?since=${encodeURIComponent(cursor)}`, auth, (ids) => ids.length > 0, opened)
        )
        yield* Deferred.await(opened)
        yield* fleet.ask("scout", "more")
        const reply = yield* Fiber.join(stream)
        assert.isAbove(reply.ids[0]!, before, `${cursor}: replayed from the store`)
        assert.match(reply.raw, /^retry: \d+/)
      }
      const big = yield* post(base, "/schedule/pause", { pad: "x".repeat(70 * 1024) }, auth)
      assert.strictEqual(big.status, 413)
      const notJson = yield* post(base, "/schedule/pause", {}, { ...auth, "content-type": "application/json" })
      assert.strictEqual(notJson.status, 409) // an empty JSON body is {}: the scheduler is what is missing
      const badJson = yield* request(`${base}/schedule/pause`, {
        method: "POST",
        headers: { ...auth, origin: base, accept: "application/json", "content-type": "application/json" },
        body: "[1, 2]"
      })
      assert.strictEqual(badJson.status, 400)
      const xml = yield* request(`${base}/schedule/pause`, {
        method: "POST",
        headers: { ...auth, origin: base, "content-type": "application/xml" },
        body: "<a/>"
      })
      assert.strictEqual(xml.status, 415)
    }))
})
