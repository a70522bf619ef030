/**
 * Markup, safely, for the dashboard and the panels other packages contribute to it (`Http.Panel`): the `html`
 * tagged template escapes everything it interpolates (agent replies, tool inputs and names are untrusted text),
 * except `Html` values, which are markup already (`html` results). Arrays are joined; `null`, `undefined` and
 * `false` render nothing, so `${cond && html`...`}` works. And the few parts every panel uses: a time, a status
 * pill, links to an agent's and a run's page, an empty table row.
 */

/** Markup that is safe to send as is. */
export class Html {
  constructor(readonly value: string) {}
  toString() {
    return this.value
  }
}

export type Value = Html | string | number | boolean | null | undefined | ReadonlyArray<Value>

const ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", "\"": "&quot;", "'": "&#39;" }

/** Text as HTML text or attribute content. */
const escape = (text: string): string => text.replace(/[&<>"']/g, (c) => ESCAPES[c]!)

const render = (value: Value): string => {
  if (value instanceof Html) return value.value
  if (Array.isArray(value)) return value.map(render).join("")
  if (value === null || value === undefined || value === false) return ""
  return escape(String(value))
}

export const html = (strings: TemplateStringsArray, ...values: ReadonlyArray<Value>): Html => {
  let out = strings[0]!
  values.forEach((value, i) => (out += render(value) + strings[i + 1]!))
  return new Html(out)
}

/** An instant, shown in UTC to the minute (the page's script shows it in the reader's zone). */
export const at = (iso: string | null) =>
  iso === null ?
    html`<span class="muted">—</span>` :
    html`<time datetime="${iso}" data-at>${iso.slice(0, 16).replace("T", " ")} UTC</time>`

export const pill = (status: string) => html`<span class="pill pill-${status}">${status}</span>`

/** A link to an agent's page (a closed agent's too: it is read from the store). */
export const agentLink = (name: string, label: string = name) =>
  html`<a href="/agents/${encodeURIComponent(name)}">${label}</a>`

/** A link to a run's page: what it was, how it ended, what it changed. */
export const runLink = (name: string, label: string = name) =>
  html`<a href="/runs/${encodeURIComponent(name)}">${label}</a>`

/** A table's one row when it has none, saying why. */
export const empty = (columns: number, text: string) =>
  html`<tr class="empty"><td colspan="${columns}">${text}</td></tr>`
