/**
 * `/schedule`: the scheduler's state (mode, working hours, overrides, what runs), its routines and findings,
 * and the steering buttons above them; a notice when no scheduler runs. Below the routines, with a scheduler or
 * without: the panels other packages contribute to this page (`Http.panels`: the webhooks' triggers and
 * notifications), which the dashboard renders without knowing them.
 */
import * as Http from "@flotta/core/Http"
import type { Finding, Override, RoutineStatus, SchedulerStatus } from "@flotta/scheduler/Steering"
import { Effect, Option } from "effect"
import { html } from "./Html.js"
import type { Page } from "./PageParts.js"
import { action, at, dollars, duration, empty, pill, since } from "./PageParts.js"
import * as Views from "./Views.js"

const cadence = (r: RoutineStatus) =>
  "intervalMs" in r.every
    ? `every ${duration(r.every.intervalMs)}`
    : "dailyAt" in r.every
    ? `daily at ${r.every.dailyAt}`
    : "on trigger"

const overrideText = (o: Override) => {
  switch (o.kind) {
    case "keep_going":
      return html`keep going${o.minutes === undefined ? "" : ` (+${o.minutes} min)`} until ${at(o.until)}`
    case "work_on":
      return html`work on ${o.date ?? ""}${o.window === undefined ? "" : ` ${o.window.start}–${o.window.end}`}`
    case "stop_for_today":
      return html`stopped for today, until ${at(o.until)}`
  }
}

const routineRow = (r: RoutineStatus) =>
  html`<tr>
<th scope="row">${r.name}</th>
<td>${r.action}</td>
<td>${cadence(r)}</td>
<td>${pill(r.state)}${r.railedUntil === null ? "" : html` <span class="muted">until ${at(r.railedUntil)}</span>`}</td>
<td>${at(r.nextFireAt)}</td>
<td>${
    r.lastFire === null
      ? html`<span class="muted">never</span>`
      : html`${pill(r.lastFire.ok ? "ok" : "failed")} ${at(r.lastFire.at)} · ${dollars(r.lastFire.costUsd)}`
  }</td>
<td class="num">${dollars(r.spentTodayUsd)}${
    r.dailyBudgetUsd === null ? "" : html` <span class="muted">of ${dollars(r.dailyBudgetUsd)}</span>`
  }</td>
<td class="num">${r.maxBudgetUsd === null ? html`<span class="muted">—</span>` : dollars(r.maxBudgetUsd)}</td>
<td>${action(`/schedule/routines/${encodeURIComponent(r.name)}/run`, "Run now", { kind: "run" })}</td>
</tr>`

const findingView = (f: Finding) =>
  html`<li>${f.priority && pill(f.priority)} <strong>${f.title}</strong>
<span class="muted">${f.routine ?? "ad-hoc scan"} · seen ${f.sightings}× · last ${at(f.foundAt)}</span>
${f.detail.length > 0 && html`<p>${f.detail}</p>`}</li>`

const statusView = (s: SchedulerStatus) => {
  const spent = s.routines.reduce((sum, r) => sum + r.spentTodayUsd, 0)
  const budget = s.routines.reduce((sum, r) => sum + (r.dailyBudgetUsd ?? 0), 0)
  return html`<dl class="facts-grid">
<div><dt>Mode</dt><dd>${pill(s.mode)}</dd></div>
<div><dt>Now</dt><dd>${s.working ? "working" : "not working"} <span class="muted">(${s.reason})</span></dd></div>
<div><dt>Local time</dt><dd>${
    s.localTime.slice(0, 16).replace("T", " ")
  } <span class="muted">${s.timezone}</span></dd></div>
<div><dt>Today</dt><dd>${s.today.weekday} ${s.today.date}: ${
    s.today.windows.length === 0
      ? "no working hours"
      : s.today.windows.map((w, i) =>
        html`${i > 0 && ", "}${w.start}–${w.end} <span class="muted">(${w.source})</span>`
      )
  }</dd></div>
<div><dt>Next change</dt><dd>${at(s.nextChange)}</dd></div>
<div><dt>Spent today</dt><dd>${dollars(spent)}${
    budget > 0 && html` <span class="muted">of ${dollars(budget)} daily rails</span>`
  }</dd></div>
</dl>
${
    s.overrides.length > 0 &&
    html`<p>Overrides: ${s.overrides.map((o, i) => html`${i > 0 && "; "}${overrideText(o)}`)}</p>`
  }
${
    s.running.length > 0 &&
    html`<p>Running: ${
      s.running.map((f, i) =>
        html`${i > 0 && "; "}${f.routine ?? "ad-hoc scan"} (${f.action}, ${f.trigger}) for ${since(f.since)}`
      )
    }</p>`
  }
<h2>Routines</h2>
<table aria-label="Routines">
<thead><tr><th scope="col">Name</th><th scope="col">Action</th><th scope="col">Cadence</th><th scope="col">State</th><th scope="col">Next fire</th><th scope="col">Last outcome</th><th scope="col" class="num">Spent today</th><th scope="col" class="num">Per fire</th><th scope="col"><span class="sr-only">Fire</span></th></tr></thead>
<tbody>${s.routines.length === 0 ? empty(9, "No routines are configured.") : s.routines.map(routineRow)}</tbody>
</table>
${s.rejected.map((r) => html`<p class="error">Skipped routine ${r.path}: ${r.message}</p>`)}`
}

const findingsView = (findings: ReadonlyArray<Finding>) =>
  html`<h2>Findings</h2>
${
    findings.length === 0
      ? html`<p class="muted">No findings yet.</p>`
      : html`<ul class="findings">${findings.map(findingView)}</ul>`
  }`

/** The title and the steering buttons, above the live status: a refresh keeps the minutes typed. */
const steering = html`<h1>Schedule</h1>
<section class="buttons" aria-label="Steering">
${action("/schedule/pause", "Pause")}
${action("/schedule/resume", "Resume")}
<form method="post" action="/schedule/keep-going" data-action="post" class="inline">
<label>Minutes <input type="number" name="minutes" value="60" min="1" max="1440" step="1"></label>
<button type="submit">Keep going</button>
</form>
${action("/schedule/stop-for-today", "Stop for today")}
</section>`

export const schedulePage = Effect.map(
  Effect.all({
    schedule: Views.schedule,
    // What other packages show here (the webhooks' triggers and notifications), through core's seam.
    panels: Effect.flatMap(Http.panels("schedule"), Effect.forEach((panel) => panel.render))
  }),
  ({ panels, schedule }): Page => {
    const webhooks = html`${panels}`
    return Option.match(schedule, {
      onNone: (): Page => ({
        status: 200,
        title: "Schedule",
        before: html`<h1>Schedule</h1>`,
        live:
          html`<p class="notice">The scheduler is off: add a <code>schedule</code> section to the config to run routines.</p>
${webhooks}`
      }),
      onSome: ({ findings, status }): Page => ({
        status: 200,
        title: "Schedule",
        before: steering,
        live: html`${statusView(status)}
${webhooks}
${findingsView(findings)}`
      })
    })
  }
)
