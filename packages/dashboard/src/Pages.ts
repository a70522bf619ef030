/**
 * The dashboard's pages, rendered on the server: `render` gives a whole document, or with `fragment` only the
 * live region `main#live`, which the client script swaps in as the report log moves. What someone types into
 * (the prompt, the filter, the minutes) sits below the live region, so a refresh never takes it away.
 *
 * Accessible names are part of the contract (tests drive the page by role and name): the tables "Agents",
 * "Routines" and "Reports", the section "Transcript", one article "Approval <id>" per approval, the textboxes
 * "Prompt", "Message", "Minutes", "Agent", "Kind" and "Token", and the buttons "Send", "Interrupt", "Close",
 * "Approve", "Deny", "Pause", "Resume", "Keep going", "Stop for today", "Run now", "Filter" and "Sign in".
 * Actions are forms with `data-action` that post to the action URLs: the script sends them by fetch, and
 * without it they post and come back by redirect.
 */
import type { AgentInfo, TurnRecord } from "@flotta/core/Agent"
import type { Approval } from "@flotta/core/Approvals"
import type { Flotta } from "@flotta/core/Flotta"
import type { ReportEntry } from "@flotta/core/ReportLog"
import type { RunResult, VerifyReport } from "@flotta/core/Run"
import type { Finding, Override, RoutineStatus, SchedulerStatus } from "@flotta/scheduler/Steering"
import { Cause, Effect, Option } from "effect"
import type { Html, PageName, Value } from "./Html.js"
import { document, html } from "./Html.js"
import * as Views from "./Views.js"
import type { AgentRow, AgentView, ReportFilter } from "./Views.js"

export type { PageName } from "./Html.js"

export interface PageRequest {
  readonly page: PageName
  /** Only the inner HTML of `main#live`. */
  readonly fragment: boolean
  /** The agent's name, for `agent`. */
  readonly name?: string | undefined
  readonly query: URLSearchParams
  /** Shown in the `#flash` alert (a failed action without the script, a bad token). */
  readonly error?: string | undefined
}

export interface Rendered {
  readonly status: number
  readonly html: string
}

interface Page {
  readonly status: number
  readonly title: string
  /** Kept across refreshes, above and below the live region: titles, and what people type into. */
  readonly before?: Html | undefined
  readonly live: Html
  readonly after?: Html | undefined
  readonly agent?: string | undefined
  readonly charts?: boolean
}

// ------------------------------------------------------------------------------------------------ pieces

const dollars = (usd: number) => `$${usd.toFixed(4)}`

/** `350 ms`, `4.2 s`, `3 min 5 s`, `2 h 5 min`. */
export const duration = (ms: number): string => {
  if (ms < 1000) return `${Math.round(ms)} ms`
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`
  const s = Math.round(ms / 1000)
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`
}

/** An instant, in UTC on the server; the script shows it in the browser's time zone (`data-at`). */
const at = (iso: string | null) =>
  iso === null ?
    html`<span class="muted">—</span>` :
    html`<time datetime="${iso}" data-at>${iso.slice(0, 16).replace("T", " ")} UTC</time>`

/** Elapsed since an instant, ticking in the browser. */
const since = (iso: string) => html`<time datetime="${iso}" data-since="${iso}">…</time>`

const pill = (status: string) => html`<span class="pill pill-${status}">${status}</span>`

const json = (value: unknown) => JSON.stringify(value, null, 2) ?? "null"

const agentLink = (name: string) => html`<a href="/agents/${encodeURIComponent(name)}">${name}</a>`

/** A button that posts to an action URL (a `data-action` form). */
const action = (url: string, label: string, options: { readonly kind?: string; readonly fields?: Value } = {}) =>
  html`<form method="post" action="${url}" data-action="${
    options.kind ?? "post"
  }" class="inline">${options.fields}<button type="submit"${
    options.kind === "close" ? html` class="danger"` : ""
  }>${label}</button></form>`

const empty = (columns: number, text: string) => html`<tr class="empty"><td colspan="${columns}">${text}</td></tr>`

// ------------------------------------------------------------------------------------------------ agents

/** `hosted`: the fleet spans several hosts (a cluster), and each row says which runs it. */
const agentRow = (hosted: boolean) => ({ currentStartedAt, info, worktree }: AgentRow) =>
  html`<tr>
<td>${agentLink(info.name)}${info.lifecycle === "run" ? html` <span class="tag">run</span>` : ""}</td>
<td>${pill(info.status)}${
    info.parkedUntil === null ? "" : html` <span class="muted">until ${at(info.parkedUntil)}</span>`
  }</td>
<td class="num">${currentStartedAt === null ? html`<span class="muted">—</span>` : since(currentStartedAt)}</td>
<td class="num">${info.queued}</td>
<td class="num">${info.totals.turns}${
    info.totals.failed > 0 ? html` <span class="warn">(${info.totals.failed} failed)</span>` : ""
  }</td>
<td class="num">${dollars(info.totals.costUsd)}</td>
<td class="num">${info.restarts}</td>
<td class="path">${worktree ?? html`<span class="muted">—</span>`}</td>${
    hosted ?
      html`
<td>${info.host ?? ""}</td>` :
      ""
  }
</tr>`

const agentsPage = Effect.gen(function*() {
  const rows = yield* Views.agents
  const cost = rows.reduce((sum, r) => sum + r.info.totals.costUsd, 0)
  const working = rows.filter((r) => r.info.status === "working").length
  const hosted = rows.some((r) => r.info.host !== undefined)
  return {
    status: 200,
    title: "Agents",
    charts: true,
    live: html`<h1>Agents</h1>
<p class="summary">${rows.length} live · ${working} working · ${dollars(cost)} spent</p>
<table aria-label="Agents">
<thead><tr><th scope="col">Name</th><th scope="col">Status</th><th scope="col" class="num">Current turn</th><th scope="col" class="num">Queued</th><th scope="col" class="num">Turns</th><th scope="col" class="num">Cost</th><th scope="col" class="num">Restarts</th><th scope="col">Worktree</th>${
      hosted ? html`<th scope="col">Host</th>` : ""
    }</tr></thead>
<tbody>${rows.length === 0 ? empty(8, "No agents are running.") : rows.map(agentRow(hosted))}</tbody>
</table>`,
    after: html`<section id="charts" class="charts" aria-label="Charts">
<figure class="chart" data-chart="costPerHour" data-unit="usd"><figcaption>Cost per hour</figcaption><div class="plot"></div></figure>
<figure class="chart" data-chart="turnDuration" data-unit="ms"><figcaption>Turn duration</figcaption><div class="plot"></div></figure>
</section>`
  } satisfies Page
})

// ------------------------------------------------------------------------------------------------ one agent

/** Tool calls with the permission decision each got (matched in order, by tool); decisions left over follow. */
const toolCalls = (turn: TurnRecord) => {
  const decisions = [...turn.permissions]
  const calls = turn.toolCalls.map((call) => {
    const i = decisions.findIndex((d) => d.tool === call.name)
    const decision = i === -1 ? undefined : decisions.splice(i, 1)[0]
    return html`<li><span class="tool">${call.name}</span>${decision && decisionOf(decision)}<pre>${
      json(call.input)
    }</pre></li>`
  })
  const rest = decisions.map((d) =>
    html`<li><span class="tool">${d.tool}</span>${decisionOf(d)}<pre>${json(d.input)}</pre></li>`
  )
  return calls.length + rest.length === 0 ? "" : html`<ol class="tools" aria-label="Tool calls">${calls}${rest}</ol>`
}

const decisionOf = (d: TurnRecord["permissions"][number]) =>
  html` <span class="decision decision-${d.decision}">${d.decision === "allow" ? "allowed" : "denied"}${
    d.by === undefined ? "" : ` by ${d.by}`
  }${d.message === undefined ? "" : `: ${d.message}`}</span>`

const turnView = (turn: TurnRecord, index: number) =>
  html`<article class="turn turn-${turn.status}" aria-label="Turn ${index + 1}">
<header>${pill(turn.status)} <span class="muted">turn ${index + 1} · ${at(turn.startedAt ?? turn.enqueuedAt)}</span>${
    turn.status === "running" && turn.startedAt !== null ? html` · ${since(turn.startedAt)}` : ""
  }${
    turn.finishedAt === null
      ? ""
      : html`<span class="facts">${dollars(turn.costUsd)} · ${
        duration(turn.durationMs)
      } · ${turn.modelCalls} model call${turn.modelCalls === 1 ? "" : "s"}</span>`
  }</header>
<div class="prompt"><span class="label">Prompt</span><p class="text">${turn.prompt}</p></div>
${toolCalls(turn)}
${
    turn.reply !== null &&
    html`<div class="reply"><span class="label">Reply</span><p class="text">${turn.reply}</p></div>`
  }
${turn.error !== null && html`<p class="error"><strong>${turn.error._tag}</strong>: ${turn.error.message}</p>`}
</article>`

const facts = (info: AgentInfo, worktree: string | null) =>
  html`<dl class="facts-grid">
<div><dt>Kind</dt><dd>${info.lifecycle}</dd></div>
<div><dt>Model</dt><dd>${info.model ?? "default"}</dd></div>
<div><dt>Turns</dt><dd>${info.totals.turns}${info.totals.failed > 0 ? ` (${info.totals.failed} failed)` : ""}</dd></div>
<div><dt>Queued</dt><dd>${info.queued}</dd></div>
<div><dt>Cost</dt><dd>${dollars(info.totals.costUsd)}</dd></div>
<div><dt>Restarts</dt><dd>${info.restarts}</dd></div>${
    info.host === undefined ? "" : html`
<div><dt>Host</dt><dd>${info.host}</dd></div>`
  }
<div><dt>Started</dt><dd>${at(info.startedAt)}</dd></div>
<div><dt>${worktree === null ? "Directory" : "Worktree"}</dt><dd class="path">${worktree ?? info.cwd}</dd></div>
</dl>`

/** One row of buttons: Interrupt and Close sit in the prompt's form but submit forms of their own (`form=`). */
const controls = (name: string) => {
  const base = `/agents/${encodeURIComponent(name)}`
  return html`<section class="controls" aria-label="Controls">
<form method="post" action="${base}/prompt" data-action="send" class="send">
<label for="prompt">Prompt</label>
<textarea id="prompt" name="text" rows="3" required placeholder="Ask ${name} something"></textarea>
<div class="buttons">
<button type="submit" class="primary">Send</button>
<span class="spacer"></span>
<button type="submit" form="interrupt">Interrupt</button>
<button type="submit" form="close" class="danger">Close</button>
</div>
</form>
<form id="interrupt" method="post" action="${base}/interrupt" data-action="interrupt"></form>
<form id="close" method="post" action="${base}/close" data-action="close"></form>
</section>`
}

const runOutcome = (result: RunResult | VerifyReport) =>
  result.kind === "verify"
    ? html`<p>${pill(result.passed ? "succeeded" : "failed")} verify of ${result.commit}</p>
<ul>${
      result.checks.map((c) => html`<li><code>${c.command}</code>: ${c.ok ? "ok" : `failed (exit ${c.exitCode})`}</li>`)
    }</ul>`
    : html`<p>${pill("succeeded")} <span class="facts">${dollars(result.costUsd)} · ${
      duration(result.durationMs)
    } · ${result.modelCalls} model calls</span></p>
${
      result.worktree &&
      html`<p>Worktree <span class="path">${result.worktree.path}</span> on branch <code>${result.worktree.branch}</code>${
        result.worktree.removed ? " (removed)" : ""
      }</p>`
    }
<div class="reply"><span class="label">Reply</span><p class="text">${result.text}</p></div>`

const missing = (name: string, text: Value) => ({
  status: 404,
  title: name,
  agent: name,
  live: html`<h1>${name}</h1><div class="notice">${text}</div>`
})

const agentPage = (view: AgentView): Page => {
  switch (view._tag) {
    case "Live": {
      const { approvals, info, status, transcript } = view
      return {
        status: 200,
        title: info.name,
        agent: info.name,
        live: html`<h1>${info.name} ${pill(status.status)}</h1>
${
          approvals.length > 0 &&
          html`<p class="notice">${approvals.length} tool call${
            approvals.length === 1 ? " waits" : "s wait"
          } for approval: <a href="/approvals">decide</a>.</p>`
        }
${facts(info, view.worktree)}
<section class="transcript" aria-label="Transcript">
${transcript.length === 0 ? html`<p class="muted">No turns yet.</p>` : transcript.map(turnView)}
</section>`,
        after: info.status === "closed" ? undefined : controls(info.name)
      }
    }
    case "Finished":
      return {
        status: 200,
        title: view.name,
        agent: view.name,
        live: html`<h1>${view.name} ${pill(view.error === null ? "finished" : "failed")}</h1>
${view.result && runOutcome(view.result)}
${view.error && html`<p class="error"><strong>${view.error._tag}</strong>: ${view.error.message}</p>`}
<p><a href="/reports?agent=${encodeURIComponent(view.name)}">Its reports</a></p>`
      }
    case "Gone":
      return view.last === null
        ? missing(view.name, html`No agent or run is named ${view.name}.`)
        : missing(
          view.name,
          html`${view.name} is not live: its last report was <strong>${view.last.kind}</strong> at ${at(view.last.at)}${
            typeof (view.last.data as { reason?: unknown } | null)?.reason === "string"
              ? ` (${(view.last.data as { reason: string }).reason})`
              : ""
          }. <a href="/reports?agent=${encodeURIComponent(view.name)}">Its reports</a>`
        )
  }
}

// ------------------------------------------------------------------------------------------------ approvals

const approvalView = (a: Approval) => {
  const base = `/approvals/${encodeURIComponent(a.id)}`
  return html`<article class="approval" aria-label="Approval ${a.id}">
<header>${agentLink(a.agent)} wants to use <span class="tool">${a.tool}</span>
<span class="muted">asked ${
    at(a.requestedAt)
  } · <time datetime="${a.expiresAt}" data-until="${a.expiresAt}">…</time></span></header>
<pre>${json(a.input)}</pre>
<form method="post" action="${base}/approve" data-action="decide" class="decide">
<label>Message <input type="text" name="message" placeholder="Optional: told to the agent"></label>
<button type="submit" class="primary">Approve</button>
<button type="submit" formaction="${base}/deny" class="danger">Deny</button>
</form>
</article>`
}

const approvalsPage = Effect.map(Views.approvals, (list): Page => ({
  status: 200,
  title: "Approvals",
  live: html`<h1>Approvals</h1>
${list.length === 0 ? html`<p class="notice">No approvals are waiting.</p>` : list.map(approvalView)}`
}))

// ------------------------------------------------------------------------------------------------ schedule

const cadence = (r: RoutineStatus) =>
  "intervalMs" in r.every ? `every ${duration(r.every.intervalMs)}` : `daily at ${r.every.dailyAt}`

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

const statusView = (s: SchedulerStatus, findings: ReadonlyArray<Finding>) => {
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
${s.rejected.map((r) => html`<p class="error">Skipped routine ${r.path}: ${r.message}</p>`)}
<h2>Findings</h2>
${
    findings.length === 0
      ? html`<p class="muted">No findings yet.</p>`
      : html`<ul class="findings">${findings.map(findingView)}</ul>`
  }`
}

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

const schedulePage = Effect.map(
  Views.schedule,
  Option.match({
    onNone: (): Page => ({
      status: 200,
      title: "Schedule",
      before: html`<h1>Schedule</h1>`,
      live:
        html`<p class="notice">The scheduler is off: add a <code>schedule</code> section to the config to run routines.</p>`
    }),
    onSome: ({ findings, status }): Page => ({
      status: 200,
      title: "Schedule",
      before: steering,
      live: statusView(status, findings)
    })
  })
)

// ------------------------------------------------------------------------------------------------ reports

/** A row of the reports table; static/app.js builds the same one for entries that arrive live. */
const reportRow = (e: ReportEntry) =>
  html`<tr data-seq="${e.seq}"><td class="num">${e.seq}</td><td>${at(e.at)}</td><td>${
    agentLink(e.agent)
  }</td><td><span class="kind">${e.kind}</span></td><td class="summary-cell">${Views.summary(e)}</td></tr>`

const reportsPage = (filter: ReportFilter) =>
  Effect.map(Views.reports(filter), (entries): Page => ({
    status: 200,
    title: "Reports",
    before: html`<h1>Reports</h1>
<form method="get" action="/reports" class="filter" aria-label="Filter reports">
<label>Agent <input type="text" name="agent" value="${filter.agent ?? ""}" placeholder="any"></label>
<label>Kind <input type="text" name="kind" value="${
      filter.kinds.join(", ")
    }" placeholder="any: result, error, …"></label>
<button type="submit">Filter</button>
</form>`,
    live: html`<table aria-label="Reports">
<thead><tr><th scope="col" class="num">Seq</th><th scope="col">At</th><th scope="col">Agent</th><th scope="col">Kind</th><th scope="col">Summary</th></tr></thead>
<tbody>${entries.length === 0 ? empty(5, "No reports match.") : entries.map(reportRow)}</tbody>
</table>`
  }))

// ------------------------------------------------------------------------------------------------ the rest

const loginPage: Page = {
  status: 401,
  title: "Sign in",
  live: html`<section class="login">
<h1>Sign in</h1>
<p>This dashboard needs the fleet's token (the <code>token</code> of the config's <code>dashboard</code> or <code>mcp</code> section).</p>
<form method="post" action="/login">
<label for="token">Token</label>
<input id="token" type="password" name="token" autocomplete="current-password" required>
<button type="submit" class="primary">Sign in</button>
</form>
</section>`
}

const notFoundPage: Page = {
  status: 404,
  title: "Not found",
  live: html`<h1>Not found</h1><p class="notice">There is no such page. <a href="/">See the agents.</a></p>`
}

const failed = (cause: Cause.Cause<unknown>): Page => ({
  status: 500,
  title: "Error",
  live: html`<h1>Something went wrong</h1><p class="error">${Cause.pretty(cause).split("\n")[0]}</p>`
})

const pageOf = (request: PageRequest): Effect.Effect<Page, never, Flotta> => {
  switch (request.page) {
    case "agents":
      return agentsPage
    case "agent":
      return request.name === undefined
        ? Effect.succeed(notFoundPage)
        : Effect.map(Views.agent(request.name), agentPage)
    case "approvals":
      return approvalsPage
    case "schedule":
      return schedulePage
    case "reports":
      return reportsPage(Views.reportFilter(request.query))
    case "login":
      return Effect.succeed(loginPage)
    case "notFound":
      return Effect.succeed(notFoundPage)
  }
}

/** A page, whole or only its live region. A defect shows as a 500 page, logged; the fleet's errors never do. */
export const render = (request: PageRequest): Effect.Effect<Rendered, never, Flotta> =>
  Effect.gen(function*() {
    const rendered = pageOf(request).pipe(
      Effect.catchAllCause((cause) => Effect.as(Effect.logError("dashboard page failed", cause), failed(cause)))
    )
    // A fragment goes into a page that already follows the log: it needs no cursor.
    if (request.fragment) return yield* Effect.map(rendered, (page) => ({ status: page.status, html: page.live.value }))
    // Read before the data: what happens meanwhile is replayed to the page, never lost.
    const cursor = request.page === "login" ? 0 : yield* Views.cursor
    const page = yield* rendered
    return {
      status: page.status,
      html: document({
        title: page.title,
        page: request.page,
        cursor,
        agent: page.agent,
        before: page.before,
        live: page.live,
        after: page.after,
        flash: request.error,
        charts: page.charts === true,
        static: request.page === "login"
      })
    }
  })
