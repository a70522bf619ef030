/**
 * `/agents/<name>`: one agent (its facts, its transcript with tool calls and the decisions they got, the prompt
 * and its controls); a closed one read back from the store (its facts, when and why it closed, its transcript, a
 * run's outcome, and no controls); a finished async run's outcome; or what the report log last said about a name
 * that is neither.
 */
import type { AgentInfo, ToolOutcome, ToolRefusal, TranscriptMark, TurnRecord } from "@flotta/core/Agent"
import * as EngineEvents from "@flotta/core/EngineEvents"
import type { ReportEntry } from "@flotta/core/ReportLog"
import type { Value } from "./Html.js"
import { html } from "./Html.js"
import type { Page } from "./PageParts.js"
import { at, dollars, duration, json, pill, runLink, since } from "./PageParts.js"
import { endedView } from "./RunPage.js"
import type { AgentView } from "./Views.js"

/**
 * Tool calls with the permission decision each got (by the call's id; by tool, in order, for records that have
 * none), and each call's outcome, its result collapsed; decisions left over follow.
 */
const toolCalls = (turn: TurnRecord) => {
  const decisions = [...turn.permissions]
  const calls = turn.toolCalls.map((call) => {
    let i = decisions.findIndex((d) => d.toolUseId === call.id)
    if (i === -1) i = decisions.findIndex((d) => d.toolUseId === undefined && d.tool === call.name)
    const decision = i === -1 ? undefined : decisions.splice(i, 1)[0]
    return html`<li><span class="tool">${call.name}</span>${decision && decisionOf(decision)}${
      call.outcome && outcomeBadge(call.outcome)
    }<pre>${json(call.input)}</pre>${call.outcome && outcomeView(call.id, call.outcome)}</li>`
  })
  const rest = decisions.map((d) =>
    html`<li><span class="tool">${d.tool}</span>${decisionOf(d)}<pre>${json(d.input)}</pre></li>`
  )
  return calls.length + rest.length === 0 ? "" : html`<ol class="tools" aria-label="Tool calls">${calls}${rest}</ol>`
}

const REFUSED: Record<ToolRefusal["reason"], string> = {
  not_offered: "not offered to this agent",
  sandbox: "refused by its sandbox",
  policy: "refused by its permission",
  human: "denied by a human",
  expired: "nobody decided in time"
}

const bytes = (n: number) => (n < 1024 ? `${n} B` : `${(n / 1024).toFixed(1)} KiB`)

/** A call's outcome beside its name: ok, error or refused (and why), how long it took. */
const outcomeBadge = (outcome: ToolOutcome) =>
  html` <span class="outcome outcome-${outcome.status}">${outcome.status}${
    outcome.refusal === undefined
      ? ""
      : `: ${REFUSED[outcome.refusal.reason]}${outcome.refusal.by === undefined ? "" : ` (${outcome.refusal.by})`}`
  } · ${duration(outcome.durationMs)}</span>`

/** A call's result, collapsed: what the model was told, cut to the bound the record keeps. */
const outcomeView = (id: string, outcome: ToolOutcome) =>
  html`<details class="result" data-call="${id}"><summary>Result, ${bytes(outcome.bytes)}${
    outcome.truncated ? ` (the first ${bytes(Buffer.byteLength(outcome.text))} kept)` : ""
  }</summary><pre>${outcome.text}</pre></details>`

const decisionOf = (d: TurnRecord["permissions"][number]) =>
  html` <span class="decision decision-${d.decision}">${d.decision === "allow" ? "allowed" : "denied"}${
    d.by === undefined ? "" : ` by ${d.by}`
  }${d.message === undefined ? "" : `: ${d.message}`}</span>`

const tokens = (n: number) => n.toLocaleString("en-US")

/** What happened to the conversation before or during a turn (see `TranscriptMark`). */
const markView = (mark: TranscriptMark) => {
  switch (mark._tag) {
    case "Forked": {
      const { from } = mark
      return html`<p class="mark" aria-label="${mark._tag}">Forked from <a href="/agents/${
        encodeURIComponent(from.agent)
      }">${from.agent}</a>${from.turnId === null ? "" : ` at ${from.turnId}`}</p>`
    }
    case "Compacted": {
      const { postTokens, preTokens, trigger } = mark.compaction
      return html`<p class="mark" aria-label="Compacted">Compacted (${trigger}): ${tokens(preTokens)} → ${
        postTokens === null ? "?" : tokens(postTokens)
      } tokens</p>`
    }
    case "Cleared":
      return html`<p class="mark" aria-label="Cleared">Cleared: a new conversation (session ${mark.sessionId})</p>`
  }
}

/** How full its context is: tokens, and the share of the window. */
const contextView = (context: NonNullable<AgentInfo["context"]>) =>
  `${tokens(context.tokens)} tokens${
    context.window === null ? "" : ` (${context.percent ?? 0}% of ${tokens(context.window)})`
  }`

const turnView = (turn: TurnRecord, index: number) =>
  html`${(turn.marks ?? []).map(markView)}<article class="turn turn-${turn.status}" aria-label="Turn ${index + 1}">
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
    turn.status === "running" &&
    html`<p class="text streaming" data-stream="${turn.turnId}" aria-label="Writing" aria-live="polite"></p>`
  }
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
    info.context === undefined ? "" : html`
<div><dt>Context</dt><dd>${contextView(info.context)}</dd></div>`
  }${
    info.sessionWritesLost === undefined ? "" : html`
<div><dt>Session file</dt><dd class="error">not written (${info.sessionWritesLost.errorCode}): part of its memory cannot be resumed</dd></div>`
  }${
    info.host === undefined ? "" : html`
<div><dt>Host</dt><dd>${info.host}</dd></div>`
  }${
    info.forkedFrom === undefined ? "" : html`
<div><dt>Forked from</dt><dd><a href="/agents/${
      encodeURIComponent(info.forkedFrom.agent)
    }">${info.forkedFrom.agent}</a>${info.forkedFrom.turnId === null ? "" : ` at ${info.forkedFrom.turnId}`}</dd></div>`
  }
<div><dt>Started</dt><dd>${at(info.startedAt)}</dd></div>
<div><dt>${worktree === null ? "Directory" : "Worktree"}</dt><dd class="path">${worktree ?? info.cwd}</dd></div>
</dl>`

/**
 * One row of buttons: Interrupt and Close sit in the prompt's form but submit forms of their own (`form=`). A
 * session also has Fork, which asks for the fork's name (and takes the turn to cut at, by default its last).
 */
const controls = (name: string, lifecycle: AgentInfo["lifecycle"], status: AgentInfo["status"]) => {
  const base = `/agents/${encodeURIComponent(name)}`
  const asleep = status === "hibernated"
  return html`<section class="controls" aria-label="Controls">
<form method="post" action="${base}/prompt" data-action="send" class="send">
<label for="prompt">Prompt</label>
<textarea id="prompt" name="text" rows="3" required placeholder="Ask ${name} something"></textarea>
<div class="buttons">
<button type="submit" class="primary">Send</button>
<span class="spacer"></span>
<button type="submit" form="interrupt">Interrupt</button>
${
    lifecycle === "session" &&
    html`<button type="submit" form="compact">Compact</button>
<button type="submit" form="clear">Clear</button>
<button type="submit" form="sleep">${asleep ? "Wake" : "Hibernate"}</button>`
  }
<button type="submit" form="close" class="danger">Close</button>
</div>
</form>
<form id="interrupt" method="post" action="${base}/interrupt" data-action="interrupt"></form>
<form id="compact" method="post" action="${base}/compact" data-action="compact"></form>
<form id="clear" method="post" action="${base}/clear" data-action="clear"></form>
<form id="sleep" method="post" action="${base}/${asleep ? "wake" : "hibernate"}" data-action="${
    asleep ? "wake" : "hibernate"
  }"></form>
<form id="close" method="post" action="${base}/close" data-action="close"></form>
${
    lifecycle === "session" &&
    html`<form method="post" action="${base}/fork" data-action="fork" class="fork" aria-label="Fork">
<label for="fork-name">Fork as</label>
<input id="fork-name" name="name" required pattern="[a-z0-9][a-z0-9._-]{0,62}" placeholder="a new name">
<label for="fork-at">at turn</label>
<input id="fork-at" name="at" pattern="t[1-9][0-9]*" placeholder="latest" size="6">
<button type="submit">Fork</button>
</form>`
  }
</section>`
}

/** Why an agent went, when its last report says. */
const reasonOf = (raw: ReportEntry) => {
  const entry = EngineEvents.decodeEngine(raw)
  if (entry._tag === "Raw") return ""
  switch (entry.kind) {
    case "closed":
    case "stopped":
      return entry.data.reason === undefined ? "" : ` (${entry.data.reason})`
    case "crashed":
    case "hibernated":
    case "session_lost":
      return ` (${entry.data.reason})`
    default:
      return ""
  }
}

const missing = (name: string, text: Value) => ({
  status: 404,
  title: name,
  agent: name,
  live: html`<h1>${name}</h1><div class="notice">${text}</div>`
})

/** A run's links: its run page (its outcome and diff), and its reports. */
const runLinks = (name: string, worktree: boolean) =>
  html`<p>${runLink(name, worktree ? "Its diff" : "Its run")} · <a href="/reports?agent=${
    encodeURIComponent(name)
  }">Its reports</a></p>`

const transcriptView = (transcript: ReadonlyArray<TurnRecord>) =>
  html`<section class="transcript" aria-label="Transcript">
${transcript.length === 0 ? html`<p class="muted">No turns yet.</p>` : transcript.map(turnView)}
</section>`

export const agentPage = (view: AgentView): Page => {
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
${view.worktree !== null && html`<p>${runLink(info.name, "Its changes so far")}</p>`}
${transcriptView(transcript)}`,
        after: info.status === "closed" ? undefined : controls(info.name, info.lifecycle, info.status)
      }
    }
    case "Closed": {
      // Read back from the store: its facts and turns, and nothing that would act on it.
      const { info, run, transcript } = view
      const isRun = info.lifecycle === "run"
      return {
        status: 200,
        title: info.name,
        agent: info.name,
        live: html`<h1>${info.name} ${pill("closed")}</h1>
<p class="notice" aria-label="Closed">Closed${info.closedAt === undefined ? "" : html` ${at(info.closedAt)}`}${
          info.closedReason === null ? "" : ` (${info.closedReason})`
        }. Read from the store: it takes no more prompts.</p>
${facts(info, view.worktree)}
${run !== null && html`<section class="outcome" aria-label="Outcome">${endedView(run)}</section>`}
${
          isRun
            ? runLinks(
              info.name,
              view.worktree !== null || run?.result?.kind === "run" && run.result.worktree !== undefined
            )
            : html`<p><a href="/reports?agent=${encodeURIComponent(info.name)}">Its reports</a></p>`
        }
${transcriptView(transcript)}`
      }
    }
    case "Finished":
      return {
        status: 200,
        title: view.name,
        agent: view.name,
        live: html`<h1>${view.name} ${pill(view.error === null ? "finished" : "failed")}</h1>
${endedView(view)}
${runLinks(view.name, view.result?.kind === "run" && view.result.worktree !== undefined || view.error !== null)}`
      }
    case "Gone":
      return view.last === null
        ? missing(view.name, html`No agent or run is named ${view.name}.`)
        : missing(
          view.name,
          html`${view.name} is not live: its last report was <strong>${view.last.kind}</strong> at ${at(view.last.at)}${
            reasonOf(view.last)
          }. <a href="/reports?agent=${encodeURIComponent(view.name)}">Its reports</a>`
        )
  }
}
