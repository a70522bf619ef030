/**
 * Markup, safely: core's `html` tagged template (`Markup`), which escapes everything it interpolates except `Html`
 * values.
 *
 * `document` is the shell every page shares: the nav, `<body data-cursor data-page data-agent>` for the client
 * script, the `#flash` alert, and the live region `main#live` (what `?fragment=1` returns).
 */

// The markup itself is core's (`Markup`): the panels other packages contribute are written with it too.
import { html } from "@flotta/core/Markup"
import type { Html } from "@flotta/core/Markup"

export { Html, html } from "@flotta/core/Markup"
export type { Value } from "@flotta/core/Markup"

export type PageName =
  | "agents"
  | "agent"
  | "run"
  | "runs"
  | "approvals"
  | "schedule"
  | "reports"
  | "costs"
  | "login"
  | "notFound"

const NAV: ReadonlyArray<readonly [href: string, label: string, page: PageName]> = [
  ["/", "Agents", "agents"],
  ["/runs", "Runs", "runs"],
  ["/approvals", "Approvals", "approvals"],
  ["/schedule", "Schedule", "schedule"],
  ["/reports", "Reports", "reports"],
  ["/costs", "Costs", "costs"]
]

export interface Shell {
  readonly title: string
  readonly page: PageName
  /** The report log's cursor at render time: the client's `/events?since=`. */
  readonly cursor: number
  readonly agent?: string | undefined
  /** Above the live region, kept across refreshes: the page's title and controls. */
  readonly before?: Html | undefined
  /** The live region's content (what `?fragment=1` returns). */
  readonly live: Html
  /** Below the live region, kept across refreshes: forms being typed in, charts. */
  readonly after?: Html | undefined
  readonly flash?: string | undefined
  /** Loads uPlot (the agents page). */
  readonly charts?: boolean
  /** Without the client script (the login page: it could not subscribe yet). */
  readonly static?: boolean
}

export const document = (shell: Shell): string =>
  "<!doctype html>\n" + html`<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<link rel="icon" href="data:,">
<title>${shell.title} · flotta</title>
<link rel="stylesheet" href="/assets/app.css">
${
    shell.charts === true && html`<link rel="stylesheet" href="/assets/uplot.min.css">
<script src="/assets/uplot.iife.min.js" defer></script>`
  }
${shell.static !== true && html`<script src="/assets/app.js" defer></script>`}
</head>
<body data-cursor="${shell.cursor}" data-page="${shell.page}"${
    shell.agent === undefined ? "" : html` data-agent="${shell.agent}"`
  }>
<header class="top">
<span class="brand">flotta</span>
<nav aria-label="Main">${
    NAV.map(([href, label, page]) =>
      html`<a href="${href}"${
        page === shell.page || (page === "agents" && shell.page === "agent") ||
          (page === "runs" && shell.page === "run")
          ? html` aria-current="page"`
          : ""
      }>${label}</a>`
    )
  }</nav>
</header>
<div id="flash" role="alert">${shell.flash}</div>
${shell.before && html`<div class="page-head">${shell.before}</div>`}
<main id="live">${shell.live}</main>
${shell.after}
</body>
</html>
`.value
