/**
 * `/approvals`: each tool call waiting for a human, with Approve and Deny.
 */
import type { Approval } from "@flotta/core/Approvals"
import { Effect } from "effect"
import { html } from "./Html.js"
import type { Page } from "./PageParts.js"
import { agentLink, at, json } from "./PageParts.js"
import * as Views from "./Views.js"

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

export const approvalsPage = Effect.map(Views.approvals, (list): Page => ({
  status: 200,
  title: "Approvals",
  live: html`<h1>Approvals</h1>
${list.length === 0 ? html`<p class="notice">No approvals are waiting.</p>` : list.map(approvalView)}`
}))
