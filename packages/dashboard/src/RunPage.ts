/**
 * `/runs/<name>`: what a run in a worktree changed against the commit it started from, as `diff(name)` gives it:
 * the files with lines added and removed, the totals, and the patch (with where it was cut, when it was); still
 * readable after gc removed the worktree. A run without a worktree, or no run of that name, says so. Every value
 * goes through the `html` template, which escapes it: a patch is the run's text, never markup.
 */
import type { RunDiff } from "@flotta/core/RunDiff"
import { html } from "./Html.js"
import type { Page } from "./PageParts.js"
import { agentLink, at, empty } from "./PageParts.js"
import type { RunDiffView } from "./Views.js"

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
  html`<h1>Diff of ${agentLink(diff.name)}${
    diff.running ? html` <span class="pill pill-working">running</span>` : ""
  }</h1>
<p class="facts">Branch <code>${diff.branch}</code> against <code>${
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

export const runPage = (view: RunDiffView): Page =>
  view._tag === "Diff"
    ? { status: 200, title: `Diff of ${view.diff.name}`, agent: view.diff.name, live: diffView(view.diff) }
    : {
      status: view.error === "RunNotFound" ? 404 : 200,
      title: `Diff of ${view.name}`,
      live: html`<h1>Diff of ${view.name}</h1><div class="notice">${view.message}. <a href="/agents/${
        encodeURIComponent(view.name)
      }">The run</a></div>`
    }
