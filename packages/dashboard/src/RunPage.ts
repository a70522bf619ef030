/**
 * `/runs/<name>`: one run, whatever it left. What it was (as `runs()` lists it: kind, state, start, duration, cost,
 * branch, the error's tag, the host; or, for a run that is not an async one, its agent's record), how it ended (the
 * reply, a best-of-N run's attempts, a verify's checks, or the failure), and what it changed in its worktree against
 * the commit it started from, as `diff(name)` gives it: the files with lines added and removed, the totals, and the
 * patch (with where it was cut, when it was); still readable after gc removed the worktree. A run without a worktree
 * says why it has no diff, below its outcome; a name nothing knows is a 404. Every value goes through the `html`
 * template, which escapes it: a patch and a reply are the run's text, never markup.
 */
import type { TurnRecord } from "@flotta/core/Agent"
import type { RunResult, VerifyReport } from "@flotta/core/Run"
import type { RunDiff } from "@flotta/core/RunDiff"
import type { RunView } from "@flotta/core/RunList"
import type { Value } from "./Html.js"
import { html } from "./Html.js"
import type { Page } from "./PageParts.js"
import { agentLink, at, dollars, duration, empty, pill, since } from "./PageParts.js"
import type { RunOutcomeView, RunPageView } from "./Views.js"

const count = (n: number | null, sign: string) =>
  n === null
    ? html`<span class="muted">binary</span>`
    : html`<span class="diff-${sign === "+" ? "add" : "del"}">${sign}${n}</span>`

/** A patch line by line, each marked for its colour: added, removed, a hunk or a file's header. */
const patchView = (patch: string) =>
  patch.replace(/\n$/, "").split("\n").map((line) => {
    const kind = line.startsWith("+++") || line.startsWith("---") || line.startsWith("diff --git")
      ? "file"
      : line.startsWith("@@")
      ? "hunk"
      : line.startsWith("+")
      ? "add"
      : line.startsWith("-")
      ? "del"
      : "ctx"
    return html`<span class="line line-${kind}">${line}</span>\n`
  })

const diffView = (diff: RunDiff) =>
  html`<p class="facts">Branch <code>${diff.branch}</code> against <code>${
    diff.base.slice(0, 12)
  }</code> · worktree <span class="path">${diff.worktree}</span> · ${
    diff.running ? "changes so far, read" : "recorded"
  } ${at(diff.at)}</p>
<table aria-label="Files">
<thead><tr><th>File</th><th class="num">Added</th><th class="num">Removed</th></tr></thead>
<tbody>${
    diff.files.length === 0
      ? empty(3, "No changes.")
      : diff.files.map((f) =>
        html`<tr><td class="path">${f.path}</td><td class="num">${count(f.added, "+")}</td><td class="num">${
          count(f.removed, "-")
        }</td></tr>`
      )
  }</tbody>
<tfoot><tr><td>${diff.files.length} file${
    diff.files.length === 1 ? "" : "s"
  }</td><td class="num">+${diff.added}</td><td class="num">-${diff.removed}</td></tr></tfoot>
</table>
<section aria-label="Patch">
${
    diff.truncated &&
    html`<p class="notice">The patch is cut at ${
      Math.round(new TextEncoder().encode(diff.patch).length / 1024)
    } KiB of its ${Math.round(diff.patchBytes / 1024)} KiB.</p>`
  }
${
    diff.patch.length === 0
      ? html`<p class="muted">No patch.</p>`
      : html`<pre class="patch">${patchView(diff.patch)}</pre>`
  }
</section>`

/** A best-of-N run's attempts: each one's fate, spend, failing check and branch; the winner first in words. */
const attemptsTable = (result: RunResult) =>
  html`<p>Attempt ${result.attempt ?? "?"} of ${result.attempts?.length ?? 0} won; all together ${
    dollars(result.totalCostUsd ?? result.costUsd)
  }.</p>
<table class="attempts" aria-label="Attempts"><thead><tr><th>Attempt</th><th>Status</th><th>Cost</th><th>Failed check</th><th>Branch</th></tr></thead><tbody>${
    (result.attempts ?? []).map((a) => {
      const failed = a.checks?.find((c) => !c.ok)
      return html`<tr><td>${a.attempt}</td><td>${pill(a.status)}</td><td>${dollars(a.costUsd)}</td><td>${
        failed === undefined
          ? a.error?._tag ?? ""
          : html`<code>${failed.command}</code> (exit ${failed.exitCode ?? "none"})`
      }</td><td><code>${a.worktree?.branch ?? ""}</code></td></tr>`
    })
  }</tbody></table>`

/** How a run or a verify ended: a verify's checks, or a run's spend, worktree, reply and attempts. */
export const runOutcome = (result: RunResult | VerifyReport) =>
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
<div class="reply"><span class="label">Reply</span><p class="text">${result.text}</p></div>
${result.attempts && attemptsTable(result)}`

/** An outcome, or the failure it was. */
export const endedView = (outcome: RunOutcomeView) =>
  html`${outcome.result && runOutcome(outcome.result)}
${outcome.error && html`<p class="error"><strong>${outcome.error._tag}</strong>: ${outcome.error.message}</p>`}`

/** How long it took, or how long it has been going. */
const took = (startedAt: string, finishedAt: string | null) =>
  finishedAt === null
    ? html`${since(startedAt)} so far`
    : duration(Math.max(0, Date.parse(finishedAt) - Date.parse(startedAt)))

const fact = (label: string, value: Value) => html`<div><dt>${label}</dt><dd>${value}</dd></div>`

/** What `runs()` says of it. */
const listedFacts = (run: RunView) =>
  html`<dl class="facts-grid" aria-label="Run">
${fact("Kind", run.kind)}
${fact("State", pill(run.state))}
${fact("Started", at(run.startedAt))}
${fact("Finished", at(run.finishedAt))}
${fact("Duration", took(run.startedAt, run.finishedAt))}
${run.kind === "run" && fact("Cost", run.costUsd === null ? html`<span class="muted">—</span>` : dollars(run.costUsd))}
${run.branch !== null && fact("Branch", html`<code>${run.branch}</code>`)}
${run.worktree !== null && fact("Worktree", html`<span class="path">${run.worktree}</span>`)}
${run.passed !== null && fact("Checks", run.passed ? "passed" : "failed")}
${run.error !== null && fact("Error", html`<strong class="error">${run.error}</strong>`)}
${run.host !== undefined && fact("Host", run.host)}
</dl>`

/**
 * Where a run `runs()` does not list stands (a sync run, an attempt of a best-of-N run), from its agent's record:
 * still going while its agent is, else as its one turn ended.
 */
const agentState = ({ info, last }: NonNullable<RunPageView["agent"]>) =>
  info.status !== "closed" ? "running" : last?.status === "failed" ? "failed" : last === null ? "closed" : "succeeded"

/** What its agent's record says of a run that `runs()` does not list. */
const agentFacts = (agent: NonNullable<RunPageView["agent"]>) =>
  html`<dl class="facts-grid" aria-label="Run">
${fact("Kind", "run")}
${fact("State", pill(agentState(agent)))}
${fact("Started", at(agent.info.startedAt))}
${agent.info.closedAt !== undefined && fact("Finished", at(agent.info.closedAt))}
${fact("Cost", dollars(agent.info.totals.costUsd))}
${fact("Directory", html`<span class="path">${agent.info.cwd}</span>`)}
${agent.info.host !== undefined && fact("Host", agent.info.host)}
</dl>`

/** A run's one turn as its agent recorded it: the reply, or the failure. */
const lastTurn = (turn: TurnRecord) =>
  html`<p>${pill(turn.status)}${
    turn.finishedAt === null
      ? ""
      : html` <span class="facts">${dollars(turn.costUsd)} · ${duration(turn.durationMs)}</span>`
  }</p>
${
    turn.reply !== null &&
    html`<div class="reply"><span class="label">Reply</span><p class="text">${turn.reply}</p></div>`
  }
${turn.error !== null && html`<p class="error"><strong>${turn.error._tag}</strong>: ${turn.error.message}</p>`}`

/** Where the run's diff would be, and why there is none. */
const noDiff = (view: Extract<RunPageView["diff"], { _tag: "None" }>) =>
  html`<p class="notice">No diff: ${view.message}.</p>`

export const runPage = (view: RunPageView & { readonly found: boolean }): Page => {
  const { name } = view
  if (!view.found) {
    return {
      status: 404,
      title: name,
      live: html`<h1>${name}</h1><div class="notice">No run is named ${name}. <a href="/runs">See the runs.</a></div>`
    }
  }
  const state = view.run?.state ?? (view.agent === null ? "finished" : agentState(view.agent))
  const kind = view.run?.kind ?? "run"
  return {
    status: 200,
    title: name,
    agent: name,
    live: html`<h1>${name}${kind === "verify" ? html` <span class="tag">verify</span>` : ""} ${pill(state)}</h1>
${view.run !== null ? listedFacts(view.run) : view.agent !== null ? agentFacts(view.agent) : ""}
<section class="outcome" aria-label="Outcome">
${
      view.outcome !== null
        ? endedView(view.outcome)
        : state === "running"
        ? html`<p class="muted">Still running.</p>`
        : view.agent?.last
        ? lastTurn(view.agent.last)
        : ""
    }
</section>
<p>${kind === "run" && html`${agentLink(name, "Its agent and transcript")} · `}<a href="/reports?agent=${
      encodeURIComponent(name)
    }">Its reports</a> · <a href="/runs">All runs</a></p>
<section class="diff" aria-labelledby="diff-heading">
<h2 id="diff-heading">Diff</h2>
${view.diff._tag === "Diff" ? diffView(view.diff.diff) : noDiff(view.diff)}
</section>`
  }
}
