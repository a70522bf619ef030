/**
 * The dashboard's pages, rendered on the server: `render` gives a whole document, or with `fragment` only the
 * live region `main#live`, which the client script swaps in as the report log moves. What someone types into
 * (the prompt, the filter, the minutes) sits below the live region, so a refresh never takes it away. Each page
 * is a module of its own (`AgentsPage`, `AgentPage`, `RunsPage`, `RunPage`, `ApprovalsPage`, `SchedulePage`,
 * `ReportsPage`, `CostsPage`); the sign-in and not-found pages are here.
 *
 * Accessible names are part of the contract (tests drive the page by role and name): the tables "Agents", "Runs",
 * "Routines", "Triggers", "Notifications", "Reports", "Files", "Top agents", "Top models", "Top runs" and
 * "Top routines", the navigations "State" and "Kind" (the runs' filters), the description list "Run", the sections
 * "Patch", "Outcome" and "Transcript", the note "Closed", one article "Approval <id>" per approval, the
 * textboxes "Prompt", "Message", "Minutes", "Agent", "Kind", "Since", "Until" and "Token", and the buttons "Send",
 * "Interrupt", "Close", "Approve", "Deny", "Pause", "Resume", "Keep going", "Stop for today", "Run now", "Filter",
 * "Show" and "Sign in".
 * Actions are forms with `data-action` that post to the action URLs: the script sends them by fetch, and
 * without it they post and come back by redirect.
 */
import type { StoreUnavailable } from "@flotta/core/Errors"
import type { Flotta } from "@flotta/core/Flotta"
import { Cause, Effect, Either } from "effect"
import { agentPage } from "./AgentPage.js"
import { agentsPage } from "./AgentsPage.js"
import { approvalsPage } from "./ApprovalsPage.js"
import { costsPage } from "./CostsPage.js"
import type { PageName } from "./Html.js"
import { document, html } from "./Html.js"
import type { Page } from "./PageParts.js"
import { reportsPage } from "./ReportsPage.js"
import { runPage } from "./RunPage.js"
import { runsPage } from "./RunsPage.js"
import { schedulePage } from "./SchedulePage.js"
import * as Views from "./Views.js"

export type { PageName } from "./Html.js"

export interface PageRequest {
  readonly page: PageName
  /** Only the inner HTML of `main#live`. */
  readonly fragment: boolean
  /** The agent's name, for `agent`; the run's, for `run`. */
  readonly name?: string | undefined
  readonly query: URLSearchParams
  /** Shown in the `#flash` alert (a failed action without the script, a bad token). */
  readonly error?: string | undefined
}

export interface Rendered {
  readonly status: number
  readonly html: string
}

export { duration } from "./PageParts.js"

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

/** The store cannot be read now: the page says which store and why; the next refresh tries again. */
const storeUnavailable = (error: StoreUnavailable): Page => ({
  status: 503,
  title: "Store unavailable",
  live: html`<h1>The store cannot be read</h1><p class="error">${error.message}</p>`
})

const failed = (cause: Cause.Cause<unknown>): Page => ({
  status: 500,
  title: "Error",
  live: html`<h1>Something went wrong</h1><p class="error">${Cause.pretty(cause).split("\n")[0]}</p>`
})

const pageOf = (request: PageRequest): Effect.Effect<Page, Views.Unanswered, Flotta> => {
  switch (request.page) {
    case "agents":
      return agentsPage
    case "agent":
      return request.name === undefined
        ? Effect.succeed(notFoundPage)
        : Effect.map(Views.agent(request.name), agentPage)
    case "run":
      return request.name === undefined
        ? Effect.succeed(notFoundPage)
        : Effect.map(Views.run(request.name), runPage)
    case "runs":
      return runsPage(request.query)
    case "approvals":
      return approvalsPage
    case "schedule":
      return schedulePage
    case "reports":
      return reportsPage(Views.reportFilter(request.query))
    case "costs":
      return costsPage(request.query)
    case "login":
      return Effect.succeed(loginPage)
    case "notFound":
      return Effect.succeed(notFoundPage)
  }
}

/**
 * A page, whole or only its live region. A store that cannot be read shows as a 503 page naming it; a defect as a
 * 500 page, logged; the fleet's other errors never do.
 */
export const render = Effect.fn("Pages.render")(function*(request: PageRequest) {
  const rendered = pageOf(request).pipe(
    Effect.catchTag("StoreUnavailable", (error) => Effect.succeed(storeUnavailable(error))),
    Effect.catchAllCause((cause) => Effect.as(Effect.logError("dashboard page failed", cause), failed(cause)))
  )
  // A fragment goes into a page that already follows the log: it needs no cursor.
  if (request.fragment) return yield* Effect.map(rendered, (page) => ({ status: page.status, html: page.live.value }))
  // Read before the data: what happens meanwhile is replayed to the page, never lost.
  const read = request.page === "login" ? Either.right(0) : yield* Effect.either(Views.cursor)
  // A store that cannot be read shows as the error page, like any other failure to answer.
  const cursor = Either.getOrElse(read, () => 0)
  const page = Either.isLeft(read) ? failed(Cause.fail(read.left)) : yield* rendered
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
