/**
 * `flotta notify test`: the config's targets get one test notification each, signed and in their format, from a
 * real HTTP receiver's point of view on 127.0.0.1 (which checks the signature); a target that refuses it fails the
 * command, and what is printed shows each URL's origin only.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, Option } from "effect"
import { createHmac } from "node:crypto"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as ConfigFile from "../src/ConfigFile.js"
import * as ExitCode from "../src/ExitCode.js"
import * as NotifyCommand from "../src/NotifyCommand.js"

const SECRET = "a-receiver-secret-of-some-length"

interface Received {
  readonly path: string
  readonly body: string
  readonly headers: http.IncomingHttpHeaders
  /** The signature header matched the body under SECRET. */
  readonly signed: boolean
}

/** A receiver for the scope: `/ok/...` answers 204, `/down/...` 500; it keeps what it got. */
const receiver = Effect.acquireRelease(
  Effect.async<{ readonly url: string; readonly got: Array<Received>; readonly server: http.Server }>((resume) => {
    const got: Array<Received> = []
    const server = http.createServer((request, response) => {
      let body = ""
      request.setEncoding("utf8")
      request.on("data", (chunk: string) => (body += chunk))
      request.on("end", () => {
        const expected = `sha256=${createHmac("sha256", SECRET).update(body, "utf8").digest("hex")}`
        got.push({
          path: request.url ?? "",
          body,
          headers: request.headers,
          signed: request.headers["x-flotta-signature"] === expected
        })
        response.statusCode = request.url?.startsWith("/ok/") ? 204 : 500
        response.end()
      })
    })
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo
      resume(Effect.succeed({ url: `http://127.0.0.1:${port}`, got, server }))
    })
  }),
  ({ server }) =>
    Effect.async<void>((resume) => {
      server.close(() => resume(Effect.void))
    })
)

const configWith = (notify: unknown, extra: Record<string, unknown> = {}) =>
  Either.getOrThrow(
    ConfigFile.decode("/p/flotta.config.json", { ...(notify === undefined ? {} : { notify }), ...extra })
  )

describe("flotta notify test", () => {
  it.scopedLive("sends each target one signed test event in its format; a refusal fails the command", () =>
    Effect.gen(function*() {
      const { got, url } = yield* receiver
      const config = configWith(
        [
          { url: `${url}/ok/path-is-a-secret`, events: ["*"], secret: SECRET },
          { url: `${url}/down/also-secret`, events: ["run_finished"], format: "slack", secret: SECRET }
        ],
        { mcp: { port: 4123 }, dashboard: {} }
      )
      const targets = yield* NotifyCommand.targetsOf(config)
      const results = yield* NotifyCommand.sendTests(Either.getOrThrow(NotifyCommand.chosen(targets, Option.none())))

      assert.strictEqual(got.length, 2)
      const json = got.find((r) => r.path.startsWith("/ok/"))!
      assert.isTrue(json.signed, "the JSON target's signature checks out")
      const entry = JSON.parse(json.body) as Record<string, unknown>
      assert.deepInclude(entry, { seq: 0, agent: "flotta", kind: "notify_test" })
      assert.strictEqual(entry["link"], "http://127.0.0.1:4123/agents/flotta", "linked to the configured dashboard")
      assert.match(String(json.headers["x-flotta-delivery"]), new RegExp(`^${targets[0]!.id}-test-\\d+$`))
      assert.strictEqual(json.headers["content-type"], "application/json")
      const slack = got.find((r) => r.path.startsWith("/down/"))!
      assert.isTrue(slack.signed)
      assert.match(
        (JSON.parse(slack.body) as { text: string }).text,
        /notify_test <http:\/\/127\.0\.0\.1:4123\/.*\|open>$/
      )

      assert.deepStrictEqual(results.map((r) => [r.target, r.ok, r.status]), [[1, true, 204], [2, false, 500]])
      assert.strictEqual(results[1]!.reason, "it answered 500")
      assert.isTrue(results.every((r) => r.ms >= 0 && r.signed))
      const printed = NotifyCommand.renderResults(results)
      assert.match(
        printed,
        new RegExp(`^ok {4}1 ${url}/…  204 in \\d+ ms \\(json, signed; delivery \\w+-test-\\d+\\)$`, "m")
      )
      assert.match(printed, new RegExp(`^FAIL  2 ${url}/…  it answered 500 \\(after \\d+ ms\\)`, "m"))
      assert.notInclude(printed, "secret", "a webhook URL's path is never printed")
      const failure = NotifyCommand.failureOf(results)
      assert.isTrue(Option.isSome(failure) && failure.value._tag === "NotificationFailed")
      assert.include(Option.getOrThrow(failure).message, `1 of 2 notification targets did not take`)
    }))

  it.scopedLive("--target picks one (from 1); a target that cannot be reached says why", () =>
    Effect.gen(function*() {
      const { got, url } = yield* receiver
      const config = configWith([
        { url: "http://127.0.0.1:1/nobody-listens", events: ["*"] },
        { url: `${url}/ok/second`, events: ["*"] }
      ])
      const targets = yield* NotifyCommand.targetsOf(config)
      const second = yield* NotifyCommand.sendTests(Either.getOrThrow(NotifyCommand.chosen(targets, Option.some(2))))
      assert.deepStrictEqual(second.map((r) => [r.target, r.ok, r.status, r.signed]), [[2, true, 204, false]])
      assert.strictEqual(got.length, 1)
      assert.isUndefined(got[0]!.headers["x-flotta-signature"], "no secret, no signature")
      assert.isTrue(Option.isNone(NotifyCommand.failureOf(second)))

      const first = yield* NotifyCommand.sendTests(Either.getOrThrow(NotifyCommand.chosen(targets, Option.some(1))))
      assert.deepStrictEqual(first.map((r) => [r.ok, r.status]), [[false, null]])
      assert.isString(first[0]!.reason)

      const beyond = NotifyCommand.chosen(targets, Option.some(3))
      assert.isTrue(Either.isLeft(beyond))
      assert.strictEqual(
        Either.isLeft(beyond) ? beyond.left.message : "",
        "--target: \"3\" is not a target: the config's notify section has 2 (1 to 2)"
      )
    }))

  it.effect("without a notify section there is nothing to send to", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(NotifyCommand.targetsOf(configWith(undefined)))
      assert.strictEqual(error._tag, "NotifyNotConfigured")
      assert.match(error.message, /^\/p\/flotta\.config\.json: no notify section/)
      assert.strictEqual(ExitCode.exitCodeFor(error._tag), 3, "a config without the section the command needs")
      assert.strictEqual(ExitCode.exitCodeFor("NotificationFailed"), 16)
    }))
})
