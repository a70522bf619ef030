/**
 * The webhooks' panel (`@flotta/webhooks/Panel`), contributed through `Http.Contributions`, on the dashboard's
 * schedule page, over the in-memory Claude (the dashboard's src imports no webhooks: this test composes them): the Triggers table (what each trigger fired, as
 * links, or why it fired nothing), with or without a scheduler; the Notifications table from a fake `Notifier`,
 * its failing target marked and its secret path never shown, and absent with no notifier; the report page's
 * summary of a trigger and the kinds its filter suggests.
 */
import { assert, describe, it } from "@effect/vitest"
import { Flotta } from "@flotta/core/Flotta"
import * as Http from "@flotta/core/Http"
import { ReportLog } from "@flotta/core/ReportLog"
import * as Testing from "@flotta/core/Testing"
import * as Delivery from "@flotta/webhooks/Delivery"
import type { Notifier, TargetStatus } from "@flotta/webhooks/Notifier"
import * as WebhooksViews from "@flotta/webhooks/Panel"
import { targetOf } from "@flotta/webhooks/WebhooksConfig"
import * as WebhooksEvents from "@flotta/webhooks/WebhooksEvents"
import { Effect, Layer, Option } from "effect"
import type { PageRequest } from "../src/Pages.js"
import { render } from "../src/Pages.js"
import * as Views from "../src/Views.js"

/** A fleet with the webhooks' panel contributed, as their layer contributes it, over `notifier` when one runs. */
const withPanel = (notifier: Option.Option<Notifier["Type"]>) =>
  Layer.provideMerge(
    Http.contribute(
      Effect.map(Flotta, (fleet): Http.Contribution => ({
        name: "webhooks",
        panels: [WebhooksViews.panel(fleet, notifier)]
      }))
    ),
    Testing.layer({ model: () => "ok" })
  )
const fleet = withPanel(Option.none())

const page = (p: PageRequest["page"], options: Partial<PageRequest> = {}) =>
  render({ page: p, fragment: false, query: new URLSearchParams(), ...options })

/** The rows of a table, by its accessible name. */
const rowsOf = (markup: string, table: string) => {
  const body = new RegExp(`<table aria-label="${table}">[^]*?<tbody>([^]*?)</tbody>`).exec(markup)
  assert.isNotNull(body, `the ${table} table`)
  return [...body![1]!.matchAll(/<tr[^>]*>([^]*?)<\/tr>/g)].map((m) => m[1]!)
}

const SECRET_URL = "https://hooks.example.com/services/T000/B000/SECRETPATH"

const failing = targetOf({ url: SECRET_URL, events: ["run_finished", "approval_requested"], format: "slack" })
const healthy = targetOf({ url: "http://127.0.0.1:9999/flotta?key=hush", events: ["*"] })

const statuses: ReadonlyArray<TargetStatus> = [
  {
    id: failing.id,
    url: failing.shown,
    events: failing.events,
    format: failing.format,
    cursor: 41,
    delivered: 7,
    lastDelivered: { seq: 40, at: "2025-03-03T09:00:00.000Z" },
    failing: {
      since: "2025-03-03T09:05:00.000Z",
      attempts: 4,
      // As the notifier keeps it: an error that quoted the URL, scrubbed where it was made.
      reason: Delivery.scrub(failing, `it answered 503 <from> ${SECRET_URL}`),
      seq: 42
    },
    deadCount: 5,
    dead: ["one", "two", "three", "four"].map((agent, i) => ({
      seq: 30 + i,
      kind: "run_finished",
      agent: `run-${agent}`,
      at: "2025-03-02T09:00:00.000Z",
      deadAt: "2025-03-03T09:00:00.000Z",
      deliveryId: `${failing.id}-${30 + i}`,
      reason: `it answered 410 (${agent})`
    }))
  },
  {
    id: healthy.id,
    url: healthy.shown,
    events: healthy.events,
    format: healthy.format,
    cursor: 42,
    delivered: 12,
    lastDelivered: { seq: 42, at: "2025-03-03T09:10:00.000Z" },
    failing: null,
    deadCount: 0,
    dead: []
  }
]

const notifier = withPanel(Option.some({ targets: [failing, healthy], status: Effect.succeed(statuses) }))

describe("the schedule page's webhooks", () => {
  it.effect("Triggers: newest first, a fired GitHub trigger with its run's link, refusals, unmapped, duplicate", () =>
    Effect.gen(function*() {
      const log = yield* ReportLog
      yield* log.post("hooks", WebhooksEvents.trigger, {
        source: "github",
        delivery: "d-1",
        event: "issues.labeled",
        repository: "acme/app",
        issue: 12,
        fired: [{ run: "fix-issue", name: "fix-issue-1" }, { routine: "triage", fireId: "fire-ab12" }],
        refused: [{ routine: "survey", error: { _tag: "RoutineRailed", message: "over its <daily> rail" } }]
      })
      yield* log.post("hooks", WebhooksEvents.triggerRefused, {
        source: "github",
        status: 401,
        reason: "X-Hub-Signature-256 does not match github.secret",
        delivery: "d-2"
      })
      yield* log.post("hooks", WebhooksEvents.trigger, {
        source: "github",
        event: "ping",
        delivery: "d-3",
        fired: [],
        unmapped: true
      })
      yield* log.post("hooks", WebhooksEvents.trigger, {
        source: "github",
        delivery: "d-1",
        duplicate: true,
        fired: []
      })
      yield* log.post("hooks", WebhooksEvents.trigger, {
        source: "webhook",
        routine: "nightly",
        fired: [],
        refused: [{ _tag: "SchedulerNotEnabled", message: "the scheduler is not running" }]
      })
      yield* log.post("someone", WebhooksEvents.trigger, { source: "github", fired: [] }) // not the webhooks': not shown

      const { html } = yield* page("schedule")
      assert.include(html, "The scheduler is off") // and the triggers are shown all the same
      assert.notInclude(html, `aria-label="Notifications"`) // no notifier in this fleet
      const rows = rowsOf(html, "Triggers")
      assert.strictEqual(rows.length, 5)
      const [routine, duplicate, unmapped, refused, fired] = rows as [string, string, string, string, string]

      assert.include(fired, "<code>issues.labeled</code>")
      assert.include(fired, "acme/app#12")
      assert.include(fired, "delivery <code>d-1</code>")
      assert.include(fired, `pill-fired">fired</span> run fix-issue: <a href="/runs/fix-issue-1">fix-issue-1</a>`)
      assert.include(fired, "routine triage <span class=\"muted\">fire</span> <code>fire-ab12</code>")
      assert.include(fired, `pill-refused">refused</span> survey <code>RoutineRailed</code>`)
      assert.include(fired, "over its &lt;daily&gt; rail")
      assert.notInclude(fired, "<daily>")

      assert.include(refused, `pill-refused">refused</span> <span class="muted">HTTP 401</span>`)
      assert.include(refused, "X-Hub-Signature-256 does not match github.secret")
      assert.include(refused, "delivery <code>d-2</code>")
      assert.include(unmapped, `pill-unmapped">unmapped</span>`)
      assert.include(duplicate, `pill-duplicate">duplicate</span>`)
      assert.include(routine, "<td>webhook</td>")
      assert.include(routine, "routine <strong>nightly</strong>")
      assert.include(routine, `pill-refused">refused</span> nightly <code>SchedulerNotEnabled</code>`)

      // In the live region: the client script's refresh brings new triggers in.
      const fragment = yield* page("schedule", { fragment: true })
      assert.include(fragment.html, `<table aria-label="Triggers">`)
    }).pipe(Effect.provide(fleet)))

  it.effect("Triggers: a line saying there are none yet", () =>
    Effect.gen(function*() {
      const { html } = yield* page("schedule", { fragment: true })
      assert.include(html, `<table aria-label="Triggers">`)
      assert.include(html, `<tr class="empty"><td colspan="4">No triggers yet`)
    }).pipe(Effect.provide(fleet)))

  it.effect("Triggers: the last 20 only", () =>
    Effect.gen(function*() {
      const log = yield* ReportLog
      for (let i = 0; i < 25; i++) {
        yield* log.post("hooks", WebhooksEvents.trigger, {
          source: "github",
          event: `e${i}`,
          fired: [],
          unmapped: true
        })
      }
      const rows = rowsOf((yield* page("schedule", { fragment: true })).html, "Triggers")
      assert.strictEqual(rows.length, WebhooksViews.TRIGGERS_SHOWN)
      assert.include(rows[0]!, "<code>e24</code>")
      assert.include(rows.at(-1)!, "<code>e5</code>")
    }).pipe(Effect.provide(fleet)))

  it.effect("Notifications: each target's delivery state, a failing one marked, no secret path anywhere", () =>
    Effect.gen(function*() {
      const { html } = yield* page("schedule")
      assert.notInclude(html, "SECRETPATH")
      assert.notInclude(html, "/services/")
      assert.notInclude(html, "hush")
      const rows = rowsOf(html, "Notifications")
      assert.strictEqual(rows.length, 2)
      const [bad, good] = rows as [string, string]

      assert.include(bad, "<code>https://hooks.example.com/…</code>")
      assert.include(bad, "<td>run_finished, approval_requested</td>")
      assert.include(bad, "<td>slack</td>")
      assert.include(bad, `<td class="num">7</td>`)
      assert.include(bad, `datetime="2025-03-03T09:00:00.000Z"`)
      assert.include(bad, `pill-failing">failing</span> since`)
      assert.include(bad, `datetime="2025-03-03T09:05:00.000Z"`)
      assert.include(bad, "4 attempts")
      assert.include(bad, "it answered 503 &lt;from&gt; https://hooks.example.com/…")
      // Five dead, the newest three shown.
      assert.match(bad, /<td>5<ul class="dead">/)
      assert.deepStrictEqual([...bad.matchAll(/agents\/(run-\w+)/g)].map((m) => m[1]), [
        "run-four",
        "run-three",
        "run-two"
      ])
      assert.include(bad, `<span class="kind">run_finished</span>`)
      assert.include(bad, "it answered 410 (four)")
      assert.match(html, /<tr class="failing">\s*<th scope="row"><code>https:\/\/hooks\.example\.com/)

      assert.include(good, "<code>http://127.0.0.1:9999/…</code>")
      assert.include(good, `pill-ok">ok</span>`)
      assert.include(good, `<td class="num">12</td>`)
      assert.match(good, /<td>0<\/td>/)

      // In the live region too.
      const fragment = yield* page("schedule", { fragment: true })
      assert.include(fragment.html, `<table aria-label="Notifications">`)
    }).pipe(Effect.provide(notifier)))

  it.effect("Notifications: a notifier with no targets says so", () =>
    Effect.gen(function*() {
      const { html } = yield* page("schedule", { fragment: true })
      assert.include(html, "No notification targets are configured.")
    }).pipe(Effect.provide(withPanel(Option.some({ targets: [], status: Effect.succeed([]) })))))
})

describe("the webhooks elsewhere", () => {
  it("triggerRow: a routine's own refusal names the routine; an entry of another shape is kept raw", () => {
    const entry = (kind: string, data: unknown) => ({
      seq: 1,
      at: "2025-03-03T09:00:00.000Z",
      agent: "hooks",
      kind,
      data
    })
    const row = WebhooksViews.triggerRow(entry("trigger", {
      source: "webhook",
      routine: "nightly",
      fired: [],
      refused: [{ _tag: "RoutineBusy", message: "still running" }]
    }))
    assert.deepStrictEqual(row.refused, [{
      target: "nightly",
      error: { _tag: "RoutineBusy", message: "still running" }
    }])
    assert.isNull(row.rejected)
    const odd = WebhooksViews.triggerRow(entry("trigger", { source: "github", fired: "everything" }))
    assert.strictEqual(odd.source, "?")
    assert.strictEqual(odd.note, `trigger: {"source":"github","fired":"everything"}`)
    assert.deepStrictEqual(odd.fired, [])
    const refused = WebhooksViews.triggerRow(
      entry("trigger_refused", { source: "webhook", status: 413, reason: "too big" })
    )
    assert.deepStrictEqual(refused.rejected, { status: 413, reason: "too big" })
  })

  it("summary: a trigger in a line", () => {
    const s = (data: unknown) =>
      Views.summary({ seq: 1, at: "2025-03-03T09:00:00.000Z", agent: "hooks", kind: "trigger", data })
    assert.strictEqual(
      s({
        source: "github",
        event: "issues.labeled",
        fired: [{ run: "fix", name: "fix-1" }, { routine: "t", fireId: "f-1" }]
      }),
      "github issues.labeled: fired fix-1, t f-1"
    )
    assert.strictEqual(
      s({ source: "webhook", routine: "nightly", fired: [], refused: [{ _tag: "X", message: "y" }] }),
      "webhook nightly: fired nothing, 1 refused"
    )
    assert.strictEqual(s({ source: "github", event: "ping", fired: [], unmapped: true }), "github ping: unmapped")
    assert.strictEqual(s({ source: "github", delivery: "d", fired: [], duplicate: true }), "github: duplicate")
  })

  it.effect("reports: a link per kind filters by it, the webhooks', the notifications' and the cluster's among them", () =>
    Effect.gen(function*() {
      const { html } = yield* page("reports", { query: new URLSearchParams("agent=hooks&kind=trigger") })
      assert.include(html, `<a href="/reports?agent=hooks&amp;kind=trigger" aria-current="true">trigger</a>`)
      assert.include(html, `name="kind" value="trigger"`) // the Kind box stays a plain textbox
      for (
        const kind of [
          "trigger",
          "trigger_refused",
          "notify_failing",
          "notify_recovered",
          "notify_dead",
          "run_finished",
          "host_lost"
        ]
      ) {
        assert.include(html, `href="/reports?agent=hooks&amp;kind=${kind}"`)
      }
    }).pipe(Effect.provide(fleet)))
})
