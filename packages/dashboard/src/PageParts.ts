/**
 * What every page is made of: the `Page` a page module returns (its title, the live region and what stays
 * around it), and the small pieces of markup the pages share (money, durations, instants, status pills, links to
 * agents and runs, action buttons, an empty table's row).
 */
import type { Html, Value } from "./Html.js"
import { html } from "./Html.js"

// An instant, a status pill, the links to an agent and a run, an empty row: core's, shared with contributed panels.
export { agentLink, at, empty, pill, runLink } from "@flotta/core/Markup"

export interface Page {
  readonly status: number
  readonly title: string
  /** Kept across refreshes, above and below the live region: titles, and what people type into. */
  readonly before?: Html | undefined
  readonly live: Html
  readonly after?: Html | undefined
  readonly agent?: string | undefined
  readonly charts?: boolean
}

export const dollars = (usd: number) => `$${usd.toFixed(4)}`

/** `350 ms`, `4.2 s`, `3 min 5 s`, `2 h 5 min`. */
export const duration = (ms: number): string => {
  if (ms < 1000) return `${Math.round(ms)} ms`
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`
  const s = Math.round(ms / 1000)
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`
}

/** Elapsed since an instant, ticking in the browser. */
export const since = (iso: string) => html`<time datetime="${iso}" data-since="${iso}">…</time>`

export const json = (value: unknown) => JSON.stringify(value, null, 2) ?? "null"

/** A button that posts to an action URL (a `data-action` form). */
export const action = (url: string, label: string, options: { readonly kind?: string; readonly fields?: Value } = {}) =>
  html`<form method="post" action="${url}" data-action="${
    options.kind ?? "post"
  }" class="inline">${options.fields}<button type="submit"${
    options.kind === "close" ? html` class="danger"` : ""
  }>${label}</button></form>`
