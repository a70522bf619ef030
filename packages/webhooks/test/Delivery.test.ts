/** What a target gets: the Slack message and its link, the JSON entry, the retry rule, the shown URL. */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import * as Delivery from "../src/Delivery.js"
import { targetOf } from "../src/WebhooksConfig.js"

describe("a delivery's body", () => {
  it.effect("the slack format is a message with a link to the page", () =>
    Effect.sync(() => {
      const target = targetOf(
        { url: "https://hooks.slack.com/services/T/B/C", events: ["*"], format: "slack" },
        "http://127.0.0.1:4099/"
      )
      assert.strictEqual(target.shown, "https://hooks.slack.com/…")
      const body = Delivery.bodyOf(target, {
        seq: 7,
        at: "2026-12-05T10:00:00.000Z",
        agent: "fixer",
        kind: "approval_requested",
        data: { id: "ap_1", tool: "Bash", input: { command: "rm -rf build" }, expiresAt: "2026-12-05T10:05:00.000Z" }
      })
      assert.deepStrictEqual(JSON.parse(body), {
        text:
          "fixer asks to use Bash ({\"command\":\"rm -rf build\"}): approve or deny it <http://127.0.0.1:4099/approvals|open>"
      })
    }))

  it.effect("an entry it cannot read (a newer host's kind, data that does not fit its kind) says its kind alone", () =>
    Effect.sync(() => {
      const target = targetOf({ url: "https://hooks.slack.com/services/T/B/C", events: ["*"], format: "slack" })
      const entry = { seq: 8, at: "2026-12-05T10:00:00.000Z", agent: "fixer" }
      assert.strictEqual(Delivery.headline({ ...entry, kind: "teleported", data: { to: "mars" } }), "fixer: teleported")
      assert.strictEqual(Delivery.headline({ ...entry, kind: "crashed", data: "?" }), "fixer: crashed")
      assert.strictEqual(
        Delivery.headline({ ...entry, kind: "crashed", data: { reason: "exit 1", exitCode: 1, stderr: "" } }),
        "fixer crashed: exit 1"
      )
      assert.deepStrictEqual(JSON.parse(Delivery.bodyOf(target, { ...entry, kind: "teleported", data: null })), {
        text: "fixer: teleported"
      })
    }))

  it.effect("the JSON format is the report entry with its link; a run's page for run_finished", () =>
    Effect.sync(() => {
      const target = targetOf({ url: "https://example.com/hook?key=s3cret", events: ["run_finished"] }, "http://h:1")
      assert.strictEqual(target.shown, "https://example.com/…")
      assert.deepStrictEqual(Option.getOrNull(target.kinds), ["run_finished"])
      const entry = { seq: 3, at: "2026-12-05T10:00:00.000Z", agent: "fix 1", kind: "run_finished", data: { ok: true } }
      assert.deepStrictEqual(JSON.parse(Delivery.bodyOf(target, entry)), { ...entry, link: "http://h:1/runs/fix%201" })
      assert.strictEqual(Delivery.deliveryId(target, entry), `${target.id}-3`)
    }))

  it.effect("a failure's reason never quotes the URL's path, query or credentials: the error here quotes the URL", () =>
    Effect.gen(function*() {
      const target = targetOf({
        url: "http://user:pw-SECRET@127.0.0.1:9/hook/KEY-SECRET?x=QUERY-SECRET",
        events: ["*"]
      })
      const failed = yield* Effect.flip(Delivery.post(target, "{}", "id"))
      assert.notMatch(failed.reason, /SECRET/)
      assert.notMatch(failed.message, /SECRET/)
      assert.strictEqual(failed.url, "http://127.0.0.1:9/…")
      assert.strictEqual(
        Delivery.scrub(target, `refused ${target.url} (GET /hook/KEY-SECRET?x=QUERY-SECRET)`),
        "refused http://127.0.0.1:9/… (GET /…)"
      )
    }))
})
