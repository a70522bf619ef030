/**
 * The dashboard in a real browser: Debian's Chromium driven by playwright-core (test/support/browser.ts) against a
 * real `flotta serve --simulate` (the real claude CLI against the built-in scripted model), whose config serves the
 * dashboard on the MCP port. The page is driven by role and accessible name, as the issue fixes them; the test's
 * own MCP client is the rest of the world (spawning, prompting, reading the report log). Nothing reloads the page
 * after it is opened: each test marks the window and checks the mark survived.
 *
 * - an agent spawned over MCP appears in "Agents", live;
 * - "Send" on an agent page queues a turn whose reply shows in the transcript;
 * - a streaming agent's words show in its running turn as the model writes them, and a tool call's result shows
 *   beside the call, collapsed until opened;
 * - "Fork" on an agent page asks for the fork's name and opens the fork's page, which says where it came from;
 * - an approval appears on /approvals live; "Approve" lets the Write happen, "Deny" does not (the model sees it);
 * - "Pause" on /schedule pauses the scheduler, "Resume" resumes it;
 * - the browser reaches the dashboard through a TCP proxy (test/support/tcpProxy.ts); cutting it while entries are
 *   written and restoring it replays exactly what was missed, from the last seen cursor;
 * - a working agent's elapsed time ticks on "/", and "Interrupt" on its page ends the turn;
 * - /reports filters by agent and kind, and its live rows follow the filter;
 * - a run in a worktree links to its page /runs/<name>: the files it changed and the patch, escaped; /runs (in the
 *   nav) lists it, finished, and links back to that page, which says how it ended;
 * - the Costs page (from the nav) shows the totals, the spend-by-day chart and the top spenders flotta_costs gives,
 *   and its CSV link downloads what `Costs.toCsv` makes of the same window;
 * - a foreign Origin is refused (from Node and from a page on another origin), and with `mcp.token` set a missing
 *   token is refused, `/?token=` and the login form set an HttpOnly, SameSite=Strict cookie.
 *
 * A screenshot of each page lands in test-artifacts/ (git-ignored), and `dashboard-readme.png` there is the
 * README's picture (docs/dashboard.png is a compressed copy of one).
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { type CostReport, toCsv as csvOf } from "@flotta/core/Costs"
import type { CallToolResult } from "@modelcontextprotocol/client"
import * as fs from "node:fs"
import * as http from "node:http"
import * as os from "node:os"
import * as path from "node:path"
import type { Browser, BrowserContext, Page } from "playwright-core"
import { launchBrowser, screenshot } from "./support/browser.js"
import { newRepo } from "./support/git.js"
import { freePort } from "./support/ports.js"
import { startServe } from "./support/serve.js"
import { startTcpProxy, type TcpProxy } from "./support/tcpProxy.js"
import { eventually, waitUntil } from "./support/waiting.js"

/** Generous: two shared cores, real claude processes, a real browser. */
const SLOW = 60_000

const ALL_WEEK = Object.fromEntries(["mon", "tue", "wed", "thu", "fri", "sat", "sun"].map((d) => [d, ["00:00-24:00"]]))
const GUARDED = { allow: ["Read"], ask: ["Write"] }
const TOKEN = "browser-test-token-0123456789"

let dir: string
let browser: Browser

beforeAll(async () => {
  dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "flotta-dashboard-browser-")))
  browser = await launchBrowser()
}, SLOW)

afterAll(async () => {
  await browser?.close()
  if (dir !== undefined) fs.rmSync(dir, { recursive: true, force: true })
})

interface Served {
  readonly project: string
  readonly port: number
  readonly base: string
  readonly out: { readonly stdout: string; readonly stderr: string; readonly exited: boolean }
  readonly call: <A = Record<string, unknown>>(name: string, args?: Record<string, unknown>) => Promise<A>
  /** A tool's whole result, an error one too. */
  readonly callResult: (name: string, args?: Record<string, unknown>) => Promise<CallToolResult>
  readonly stop: () => Promise<void>
}

/** A project with this config (plus `mcp` on a free port and `dashboard: {}`), served by `flotta serve --simulate`. */
const serve = async (name: string, config: Record<string, unknown>, mcp: Record<string, unknown> = {}) => {
  // SIGTERM when it stops, so that serve closes its claude processes itself; SIGKILL only if it hangs.
  const served = await startServe(path.join(dir, name), { config: { ...config, mcp, dashboard: {} }, timeout: SLOW })
  const stop = async () => void (await served.stop())
  try {
    const base = `http://127.0.0.1:${served.port}`
    assert.include(served.out.stderr, `${base}/`, `serve prints the dashboard's URL: ${served.out.stderr}`)
    const connected = await served.client()
    const callResult = async (tool: string, args: Record<string, unknown> = {}) =>
      await connected.callTool({ name: tool, arguments: args }) as CallToolResult
    const call = async <A = Record<string, unknown>>(tool: string, args: Record<string, unknown> = {}) => {
      const result = await callResult(tool, args)
      assert.notStrictEqual(result.isError, true, `${tool}: ${JSON.stringify(result.content)}`)
      return result.structuredContent as A
    }
    return {
      project: served.project,
      port: served.port,
      base,
      out: served.out,
      call,
      callResult,
      stop
    } satisfies Served
  } catch (error) {
    await stop()
    throw error
  }
}

/** Waits until the turn is done over MCP and returns its reply text. */
const replyOf = async (served: Served, name: string, turnId: string) => {
  const waited = await eventually(
    () =>
      served.call<{ done: boolean; result?: { text: string } }>("flotta_wait", { name, turnId, timeoutSeconds: 30 }),
    (v) => v.done,
    120_000,
    `the reply to ${name}'s ${turnId}`
  )
  return waited.result?.text ?? ""
}

interface ReportEntry {
  readonly seq: number
  readonly agent: string
  readonly kind: string
}

/** The report log's entries after `cursor`, over MCP. */
const entriesAfter = async (served: Served, cursor: number) =>
  (await served.call<{ entries: Array<ReportEntry>; next: number }>("flotta_reports", { cursor, limit: 10_000 }))
    .entries

/** Money as the dashboard shows it. */
const usd4 = (usd: number) => `$${usd.toFixed(4)}`

/** Marks the window: a reload or a navigation would lose the mark. */
const mark = (page: Page) => page.evaluate(() => (globalThis as { flottaMark?: number }).flottaMark = 1)
const assertNotReloaded = async (page: Page) =>
  assert.strictEqual(
    await page.evaluate(() => (globalThis as { flottaMark?: number }).flottaMark),
    1,
    "the page was reloaded or navigated"
  )

/** The seqs in the "Reports" table, top to bottom (its first column is the seq). */
const reportSeqs = (page: Page) =>
  page.getByRole("table", { name: "Reports" }).locator("tbody tr").evaluateAll((rows) =>
    rows.map((row) => {
      const cells = row as unknown as {
        readonly dataset: Record<string, string | undefined>
        readonly querySelector: (selector: string) => { readonly textContent: string | null } | null
      }
      const text = cells.dataset["seq"] ?? cells.querySelector("td, th")?.textContent ?? ""
      return Number(/\d+/.exec(text)?.[0] ?? NaN)
    })
  )

describe("the dashboard in Chromium, against flotta serve --simulate", () => {
  let served: Served
  let context: BrowserContext
  let writesTo: string

  beforeAll(async () => {
    served = await serve("fleet", {
      agents: [{ name: "guarded", permission: GUARDED }],
      schedule: { timezone: "utc", hours: ALL_WEEK },
      routines: [
        {
          name: "nudge",
          action: "prompt",
          agent: "guarded",
          prompt: "ECHO how are things?",
          every: { intervalMs: 3_600_000 }
        }
      ]
    })
    writesTo = served.project
    context = await browser.newContext({ baseURL: served.base, viewport: { width: 1200, height: 700 } })
  }, 120_000)

  afterAll(async () => {
    await context?.close()
    await served?.stop()
  })

  it("an agent spawned over MCP appears in the Agents table without a reload, and links to its page", async () => {
    const page = await context.newPage()
    await page.goto("/")
    const agents = page.getByRole("table", { name: "Agents" })
    await agents.getByRole("link", { name: "guarded", exact: true }).waitFor({ timeout: SLOW })
    await mark(page)
    const cwd = path.join(served.project, "scout")
    fs.mkdirSync(cwd)
    await served.call("flotta_spawn", { name: "scout", cwd })
    await agents.getByRole("link", { name: "scout", exact: true }).waitFor({ timeout: SLOW })
    await assertNotReloaded(page)
    const row = agents.getByRole("row").filter({ has: page.getByRole("link", { name: "scout", exact: true }) })
    await row.getByText("idle").waitFor({ timeout: SLOW })
    // The picture for the README: two agents, one of them with a turn behind it.
    await screenshot(page, "dashboard-agents")
    await agents.getByRole("link", { name: "scout", exact: true }).click()
    await page.waitForURL(/\/agents\/scout$/, { timeout: SLOW })
    await page.close()
  }, 180_000)

  it("Send on an agent page queues a turn and its reply shows in the transcript", async () => {
    const page = await context.newPage()
    await page.goto("/agents/scout")
    await mark(page)
    const prompt = page.getByRole("textbox", { name: "Prompt" })
    await prompt.fill("ECHO hello from the browser")
    await page.getByRole("button", { name: "Send" }).click()
    const transcript = page.getByRole("region", { name: "Transcript" })
    await transcript.getByText("ECHO: hello from the browser").waitFor({ timeout: SLOW })
    await assertNotReloaded(page)
    assert.strictEqual(await prompt.inputValue(), "", "Send clears the textbox")
    // The transcript shows the prompt too, and the turn is in the log as the MCP client sees it.
    await transcript.getByText("ECHO hello from the browser", { exact: false }).first().waitFor({ timeout: SLOW })
    const turns = await served.call<{ turns: Array<{ prompt: string }> }>("flotta_transcript", { name: "scout" })
    assert.include(turns.turns.map((t) => t.prompt), "ECHO hello from the browser")
    await screenshot(page, "dashboard-agent")
    await page.close()
  }, 180_000)

  it(
    "a turn as it happens: a streaming agent's words while it runs, then each tool call's result, collapsed",
    async () => {
      const cwd = path.join(served.project, "streamer")
      fs.mkdirSync(cwd)
      await served.call("flotta_spawn", { name: "streamer", cwd, permission: "full", stream: true })
      const page = await context.newPage()
      await page.goto("/agents/streamer")
      await mark(page)
      const transcript = page.getByRole("region", { name: "Transcript" })
      // The model streams its answer over 6 s: its first words show in the running turn before the turn ends.
      const { turnId } = await served.call<{ turnId: string }>("flotta_prompt", {
        name: "streamer",
        text: "SLOW 6000 one two three four five six seven eight"
      })
      const writing = transcript.getByLabel("Writing")
      await writing.getByText(/SLOW DONE one/).waitFor({ timeout: SLOW })
      const status = await served.call<{ status: string; current: string | null }>("flotta_status", {
        name: "streamer"
      })
      assert.deepInclude(status, { status: "working", current: turnId }, "the words came while the turn ran")
      const reply = transcript.locator(".reply .text").filter({
        hasText: "SLOW DONE one two three four five six seven"
      })
      await reply.waitFor({ timeout: SLOW })
      await writing.waitFor({ state: "detached", timeout: SLOW }) // the streamed text gives way to the reply

      // A Bash call: its outcome beside it, its output collapsed until opened.
      await served.call("flotta_prompt", { name: "streamer", text: "BASH echo printed-by-bash" })
      const outcome = transcript.locator(".outcome-ok")
      await outcome.waitFor({ timeout: SLOW })
      assert.match((await outcome.textContent()) ?? "", /^ok · /)
      const result = transcript.locator("details.result").last()
      assert.isNull(await result.getAttribute("open"), "collapsed by default")
      assert.isFalse(await result.getByText("printed-by-bash").isVisible())
      await result.locator("summary").click()
      await result.getByText("printed-by-bash").waitFor({ state: "visible", timeout: SLOW })
      // The page is drawn again as the next turn comes: what was opened stays open.
      await served.call("flotta_prompt", { name: "streamer", text: "ECHO after the call" })
      await transcript.getByText("ECHO: after the call").waitFor({ timeout: SLOW })
      assert.isNotNull(await result.getAttribute("open"), "still open")
      await assertNotReloaded(page)
      await screenshot(page, "dashboard-tool-results")
      await page.close()
    },
    180_000
  )

  it("Fork on an agent page asks for the fork's name and opens its page, which says where it came from", async () => {
    const page = await context.newPage()
    await page.goto("/agents/scout")
    const fork = page.getByRole("form", { name: "Fork" })
    await fork.getByRole("textbox", { name: "Fork as" }).fill("scout-fork")
    await fork.getByRole("button", { name: "Fork" }).click()
    await page.waitForURL(/\/agents\/scout-fork$/, { timeout: SLOW })
    await page.getByText("Forked from").first().waitFor({ timeout: SLOW })
    const info = await served.call<{ forkedFrom: { agent: string } }>("flotta_info", { name: "scout-fork" })
    assert.strictEqual(info.forkedFrom.agent, "scout")
    await page.close()
  }, 180_000)

  it("an approval appears on /approvals live; Approve lets the Write happen, Deny does not", async () => {
    const page = await context.newPage()
    await page.goto("/approvals")
    await page.getByText("No approvals are waiting.").waitFor({ timeout: SLOW })
    await mark(page)

    // Approved: the file lands.
    const approved = path.join(writesTo, "approved.txt")
    const first = await served.call<{ turnId: string }>("flotta_prompt", {
      name: "guarded",
      text: `WRITE ${approved} approved in the browser`
    })
    const card = page.getByRole("article", { name: /^Approval / })
    await card.waitFor({ timeout: SLOW })
    await assertNotReloaded(page)
    await card.getByText("Write", { exact: true }).first().waitFor()
    await card.getByText(approved, { exact: false }).first().waitFor()
    assert.isFalse(fs.existsSync(approved), "nothing is written before the decision")
    await screenshot(page, "dashboard-approvals")
    await card.getByRole("button", { name: "Approve" }).click()
    assert.strictEqual(await replyOf(served, "guarded", first.turnId), `WROTE ${approved}`)
    assert.strictEqual(fs.readFileSync(approved, "utf8"), "approved in the browser\n")
    await page.getByText("No approvals are waiting.").waitFor({ timeout: SLOW })

    // Denied with a message: no file, and the model saw the denial and the message.
    const denied = path.join(writesTo, "denied.txt")
    const second = await served.call<{ turnId: string }>("flotta_prompt", {
      name: "guarded",
      text: `WRITE ${denied} should never land`
    })
    await card.waitFor({ timeout: SLOW })
    await card.getByRole("textbox", { name: "Message" }).fill("not from the browser")
    await card.getByRole("button", { name: "Deny" }).click()
    assert.match(await replyOf(served, "guarded", second.turnId), /^DENIED: .*not from the browser/)
    assert.isFalse(fs.existsSync(denied))
    await page.getByText("No approvals are waiting.").waitFor({ timeout: SLOW })
    await assertNotReloaded(page)

    const decided = await served.call<{ approvals: Array<{ status: string; decidedBy: string }> }>("flotta_approvals", {
      agent: "guarded",
      all: true
    })
    assert.sameMembers(decided.approvals.map((a) => a.status), ["allowed", "denied"])
    await page.close()
  }, 240_000)

  it("a worktree run's page shows the files it changed and its patch, escaped, linked from the run", async () => {
    const repo = newRepo(path.join(served.project, "repo"))
    const file = path.join(repo, ".claude", "worktrees", "differ", "notes.html")
    await served.call("flotta_run", {
      name: "differ",
      cwd: repo,
      worktree: true,
      permission: "full",
      prompt: `WRITE ${file} <script>window.flottaPwned = 1</script> & more`
    })
    await eventually(
      () => served.call<{ done: boolean }>("flotta_wait", { name: "differ", run: true, timeoutSeconds: 30 }),
      (v) => v.done,
      120_000,
      "the run"
    )
    const page = await context.newPage()
    await page.goto("/agents/differ")
    await page.getByRole("link", { name: "Its diff" }).click()
    await page.waitForURL(/\/runs\/differ$/, { timeout: SLOW })
    const files = page.getByRole("table", { name: "Files" })
    await files.getByText("notes.html").waitFor({ timeout: SLOW })
    await files.getByText("+1", { exact: true }).first().waitFor()
    const patch = page.getByRole("region", { name: "Patch" })
    await patch.getByText("+<script>window.flottaPwned = 1</script> & more").waitFor({ timeout: SLOW })
    await patch.getByText("+++ b/notes.html").waitFor()
    assert.isUndefined(await page.evaluate(() => (globalThis as { flottaPwned?: number }).flottaPwned))
    await screenshot(page, "dashboard-run-diff")

    // The finished run is listed on /runs (from the nav), and its row leads back to its page, which says how it ended.
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Runs" }).click()
    await page.waitForURL(/\/runs$/, { timeout: SLOW })
    const runs = page.getByRole("table", { name: "Runs" })
    await runs.getByRole("link", { name: "differ", exact: true }).click()
    await page.waitForURL(/\/runs\/differ$/, { timeout: SLOW })
    await page.getByRole("region", { name: "Outcome" }).getByText("Reply").waitFor({ timeout: SLOW })
    await page.getByRole("table", { name: "Files" }).getByText("notes.html").waitFor()
    await page.close()
  }, 240_000)

  it("the Costs page shows flotta_costs' totals, spend by day and top spenders, and downloads its CSV", async () => {
    // A turn now, so that today has spend, and the fleet at rest, so that the sums hold still.
    const turn = await served.call<{ turnId: string }>("flotta_prompt", {
      name: "scout",
      text: "ECHO what did it cost"
    })
    await replyOf(served, "scout", turn.turnId)
    const costs = (by: string, since = "30d") => served.call<CostReport>("flotta_costs", { by, since })
    const page = await context.newPage()
    await page.goto("/")
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Costs" }).click()
    await page.waitForURL(/\/costs$/, { timeout: SLOW })
    const agents = page.getByRole("table", { name: "Top agents" })
    await agents.getByRole("link", { name: "scout", exact: true }).waitFor({ timeout: SLOW })

    // The totals: what flotta_costs says for the same windows (the page follows the log, so wait for it to settle).
    const totalsOf = () =>
      Promise.all(
        ["Today", "Last 7 days", "This window"].map((name) =>
          page.getByRole("group", { name }).locator("strong").textContent()
        )
      )
    const expected = async () => {
      const today = new Date().toISOString().slice(0, 10)
      return [await costs("day", today), await costs("day", "7d"), await costs("day")].map((r) => usd4(r.totalUsd))
    }
    const want = await expected()
    await eventually(totalsOf, (got) => JSON.stringify(got) === JSON.stringify(want), SLOW, `the totals ${want}`)
    assert.notStrictEqual(want[0], "$0.0000", "today's turns cost something")

    // The top spenders, by agent and by model.
    for (const [by, name] of [["agent", "Top agents"], ["model", "Top models"]] as const) {
      const report = await costs(by)
      const rows = await page.getByRole("table", { name }).locator("tbody tr").evaluateAll((trs) =>
        trs.map((tr) =>
          Array.from(
            (tr as unknown as { cells: ArrayLike<{ textContent: string | null }> }).cells,
            (c) => (c.textContent ?? "").trim()
          )
        )
      )
      assert.deepStrictEqual(
        rows.map((r) => [r[0], r[1], r[3]]),
        report.groups.slice(0, 10).map((g) => [g.key ?? `(no ${by})`, usd4(g.costUsd), String(g.turns)]),
        name
      )
    }

    // The chart: uPlot draws spend by day on a canvas.
    const figure = page.locator("figure[data-chart=costPerDay]")
    await figure.locator("canvas").first().waitFor({ timeout: SLOW })
    assert.notInclude((await figure.getAttribute("class")) ?? "", "no-data")
    await screenshot(page, "dashboard-costs")

    // The CSV: a download of every group, and the same bytes from its address.
    const link = page.getByRole("link", { name: "Download CSV by model" })
    const href = (await link.getAttribute("href")) ?? ""
    assert.strictEqual(href, "/costs.csv?by=model&since=30d")
    const [download] = await Promise.all([page.waitForEvent("download", { timeout: SLOW }), link.click()])
    assert.strictEqual(download.suggestedFilename(), "flotta-costs-by-model.csv")
    const saved = fs.readFileSync(await download.path(), "utf8")
    const byModel = await costs("model")
    assert.strictEqual(saved, csvOf(byModel))
    const fetched = await context.request.get(href)
    assert.strictEqual(fetched.status(), 200)
    assert.match(fetched.headers()["content-type"] ?? "", /^text\/csv/)
    assert.strictEqual(fetched.headers()["content-disposition"], `attachment; filename="flotta-costs-by-model.csv"`)
    assert.strictEqual(await fetched.text(), saved)
    await page.close()
  }, 180_000)

  it("Pause on /schedule pauses the scheduler, and Resume resumes it", async () => {
    const page = await context.newPage()
    await page.goto("/schedule")
    await page.getByRole("table", { name: "Routines" }).getByText("nudge").waitFor({ timeout: SLOW })
    await mark(page)
    await screenshot(page, "dashboard-schedule")
    const status = () => served.call<{ mode: string; working: boolean }>("flotta_schedule_status")
    assert.strictEqual((await status()).mode, "working")
    await page.getByRole("button", { name: "Pause" }).click()
    await eventually(status, (s) => s.mode === "paused" && !s.working, SLOW, "the scheduler to pause")
    await page.locator("main#live").getByText(/paused/i).first().waitFor({ timeout: SLOW })
    await page.getByRole("button", { name: "Resume" }).click()
    await eventually(status, (s) => s.mode === "working" && s.working, SLOW, "the scheduler to resume")
    await assertNotReloaded(page)
    await page.close()
  }, 180_000)

  it("a connection cut and restored replays exactly the entries the page missed, from its last cursor", async () => {
    let proxy: TcpProxy | undefined
    const page = await context.newPage()
    try {
      proxy = await startTcpProxy(served.port)
      const through = proxy
      await page.goto(`${through.url}/reports`)
      const table = page.getByRole("table", { name: "Reports" })
      await table.waitFor({ timeout: SLOW })
      await mark(page)
      const cursor = Number(await page.locator("body").getAttribute("data-cursor"))
      assert.isFalse(Number.isNaN(cursor), "the body carries data-cursor")
      await waitUntil(
        () => through.requests().some((r) => r.target.startsWith("/events")),
        SLOW,
        "the page to open /events"
      )

      // Live first: a turn's entries arrive while connected.
      const before = await served.call<{ turnId: string }>("flotta_prompt", {
        name: "scout",
        text: "ECHO before the cut"
      })
      await replyOf(served, "scout", before.turnId)
      const seen = await entriesAfter(served, cursor)
      assert.isAtLeast(seen.length, 2)
      const lastSeen = Math.max(...seen.map((e) => e.seq))
      await eventually(
        () => reportSeqs(page),
        (seqs) => seen.every((e) => seqs.includes(e.seq)),
        SLOW,
        `the live entries ${seen.map((e) => e.seq).join(",")} in the table`
      )
      // Nothing else was written meanwhile, so the page's last seen entry is the log's last.
      assert.deepStrictEqual(
        (await entriesAfter(served, lastSeen)).map((e) => e.seq),
        [],
        "no entry beyond the turn's"
      )

      // Cut: entries are written that the page cannot see.
      const connectionsBefore = through.connections()
      await through.cut()
      const during = await served.call<{ turnId: string }>("flotta_prompt", {
        name: "scout",
        text: "ECHO while the connection is cut"
      })
      await replyOf(served, "scout", during.turnId)
      const missed = (await entriesAfter(served, lastSeen)).map((e) => e.seq)
      assert.isAtLeast(missed.length, 2, "a turn writes turn_started and result")
      assert.notInclude(await reportSeqs(page), missed[0], "the cut page cannot see the new entries")

      // Restored: the page catches up by itself, each missed entry once.
      await through.restore()
      const seqs = await eventually(
        () => reportSeqs(page),
        (now) => missed.every((seq) => now.includes(seq)),
        SLOW,
        `the missed entries ${missed.join(",")} in the table`
      )
      for (const seq of [...seen.map((e) => e.seq), ...missed]) {
        assert.strictEqual(seqs.filter((s) => s === seq).length, 1, `entry ${seq} once in ${seqs.join(",")}`)
      }
      assert.deepStrictEqual(seqs.slice(0, missed.length), [...missed].reverse(), "newest first")
      await assertNotReloaded(page)

      // The reconnect carried the last seen cursor, and the stream it got replayed only what came after it.
      const reconnects = through.requests().filter((r) =>
        r.connection > connectionsBefore && r.method === "GET" && r.target.startsWith("/events")
      )
      assert.isAtLeast(reconnects.length, 1, "the page reconnected to /events")
      const first = reconnects[0]!
      const since = new URL(first.target, through.url).searchParams.get("since")
      assert.isTrue(
        first.headers["last-event-id"] === String(lastSeen) || since === String(lastSeen),
        `the reconnect carries cursor ${lastSeen}: ${first.lines.join(" | ")} ${first.requestLine}`
      )
      const replayed = [...through.received(first.connection).matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]))
      assert.deepStrictEqual(replayed.slice(0, missed.length), missed, "the reconnect replays what was missed")
      assert.isTrue(replayed.every((seq) => seq > lastSeen), `nothing at or before ${lastSeen} again: ${replayed}`)
      await screenshot(page, "dashboard-reports")
    } finally {
      await page.close()
      await proxy?.close()
    }
  }, 240_000)

  it("a working agent's elapsed time ticks on /, and Interrupt on its page ends the turn", async () => {
    const page = await context.newPage()
    await page.goto("/")
    await mark(page)
    const slow = await served.call<{ turnId: string }>("flotta_prompt", {
      name: "scout",
      text: "SLOW 60000 a long job the browser interrupts"
    })
    const agents = page.getByRole("table", { name: "Agents" })
    const row = agents.getByRole("row").filter({ has: page.getByRole("link", { name: "scout", exact: true }) })
    await row.getByText("working").waitFor({ timeout: SLOW })
    const elapsed = row.locator("time[data-since]")
    const first = await elapsed.textContent()
    await eventually(() => elapsed.textContent(), (now) => now !== first, SLOW, "the elapsed time to tick")
    await assertNotReloaded(page)
    // The README's picture: the fleet with one agent at work, the charts fed by the turns so far.
    await screenshot(page, "dashboard-readme", { fullPage: false })

    const agentPage = await context.newPage()
    await agentPage.goto("/agents/scout")
    await agentPage.getByRole("button", { name: "Interrupt" }).click()
    const waited = await eventually(
      () => served.callResult("flotta_wait", { name: "scout", turnId: slow.turnId, timeoutSeconds: 20 }),
      (v) => v.isError === true || (v.structuredContent as { done?: boolean } | undefined)?.done === true,
      SLOW,
      "the interrupted turn to end"
    )
    assert.isTrue(waited.isError, JSON.stringify(waited))
    assert.match(JSON.stringify(waited.content), /TurnInterrupted/)
    await row.getByText("idle").waitFor({ timeout: SLOW })
    await assertNotReloaded(page)
    await agentPage.close()
    await page.close()
  }, 180_000)

  it("/reports filters by agent and kind, and the live rows follow the filter", async () => {
    const page = await context.newPage()
    await page.goto("/reports")
    await page.getByRole("textbox", { name: "Agent" }).fill("scout")
    await page.getByRole("textbox", { name: "Kind" }).fill("result")
    await page.getByRole("button", { name: "Filter" }).click()
    await page.waitForURL(/\/reports\?.*agent=scout/, { timeout: SLOW })
    const table = page.getByRole("table", { name: "Reports" })
    await table.waitFor({ timeout: SLOW })
    await mark(page)
    const rows = () =>
      table.locator("tbody tr").evaluateAll((trs) =>
        trs.map((tr) => (tr as unknown as { readonly textContent: string | null }).textContent ?? "")
      )
    const before = await rows()
    assert.isAbove(before.length, 0)
    for (const row of before) assert.match(row, /scout\s*result/, "only scout's results")

    const cursor = (await entriesAfter(served, 0)).reduce((max, e) => Math.max(max, e.seq), 0)
    const { turnId } = await served.call<{ turnId: string }>("flotta_prompt", { name: "scout", text: "ECHO filtered" })
    await replyOf(served, "scout", turnId)
    const written = await entriesAfter(served, cursor)
    const result = written.find((e) => e.kind === "result")!
    const started = written.find((e) => e.kind === "turn_started")!
    const seqs = await eventually(() => reportSeqs(page), (now) => now.includes(result.seq), SLOW, "the live result")
    assert.notInclude(seqs, started.seq, "turn_started is filtered out")
    assert.strictEqual(seqs[0], result.seq, "newest first")
    for (const row of await rows()) assert.match(row, /scout\s*result/)
    await assertNotReloaded(page)
    await page.close()
  }, 120_000)

  it("a foreign Origin is refused: from Node (403, no turn queued) and from a page on another origin", async () => {
    const turnsOf = async () =>
      (await served.call<{ turns: Array<unknown> }>("flotta_transcript", { name: "scout" })).turns.length
    const turnsBefore = await turnsOf()

    const evil = await fetch(`${served.base}/agents/scout/prompt`, {
      method: "POST",
      headers: {
        Origin: "http://evil.example",
        "Content-Type": "application/x-www-form-urlencoded",
        Accept: "application/json"
      },
      body: "text=ECHO+forged",
      redirect: "manual"
    })
    assert.strictEqual(evil.status, 403)
    const noOrigin = await fetch(`${served.base}/agents/scout/prompt`, {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body: "text=ECHO+forged+without+origin",
      redirect: "manual"
    })
    assert.strictEqual(noOrigin.status, 403, "a POST must carry an allowed Origin")
    const evilGet = await fetch(`${served.base}/events`, { headers: { Origin: "http://evil.example" } })
    assert.strictEqual(evilGet.status, 403, "a present foreign Origin is refused on a GET too")
    await evilGet.body?.cancel()

    // A page on another origin (a loopback one: another port), as any local web page could be.
    const otherPort = await freePort()
    const other = http.createServer((_req, res) => {
      res.setHeader("content-type", "text/html")
      res.end("<!doctype html><title>elsewhere</title><p>elsewhere</p>")
    })
    await new Promise<void>((resolve) => other.listen(otherPort, "127.0.0.1", () => resolve()))
    // The page reaches the server through a proxy, which sees the server's answers the browser hides from the
    // page (no CORS headers): each must be a 403.
    const proxy = await startTcpProxy(served.port)
    const page = await browser.newPage()
    try {
      await page.goto(`http://localhost:${otherPort}/`)
      const outcome = await page.evaluate(async (base) => {
        const events = await new Promise<string>((resolve) => {
          const source = new EventSource(`${base}/events`)
          source.addEventListener("entry", () => {
            source.close()
            resolve("entry")
          })
          source.onopen = () => {
            source.close()
            resolve("open")
          }
          source.onerror = () => {
            source.close()
            resolve("error")
          }
        })
        const read = await fetch(`${base}/api/charts`).then((r) => `status ${r.status}`, (e) => `failed: ${e}`)
        const post = await fetch(`${base}/agents/scout/prompt`, {
          method: "POST",
          mode: "no-cors",
          headers: { "Content-Type": "application/x-www-form-urlencoded" },
          body: "text=ECHO+forged+from+a+page"
        }).then((r) => r.type, (e) => `failed: ${e}`)
        return { events, read, post }
      }, proxy.url)
      assert.strictEqual(outcome.events, "error")
      assert.match(outcome.read, /^failed: /)
      assert.strictEqual(outcome.post, "opaque") // the browser sent it: the server has to refuse it
      const requests = proxy.requests()
      assert.sameMembers(requests.map((r) => `${r.method} ${r.target}`), [
        "GET /events",
        "GET /api/charts",
        "POST /agents/scout/prompt"
      ])
      for (const r of requests) assert.strictEqual(r.headers["origin"], `http://localhost:${otherPort}`)
      const statuses = Array.from(
        { length: proxy.connections() },
        // Kept-alive answers follow each other on one connection, the next status line right after a body.
        (_, i) => [...proxy.received(i + 1).matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => m[1])
      ).flat()
      assert.deepStrictEqual(statuses, ["403", "403", "403"])
    } finally {
      await page.close()
      await proxy.close()
      other.close()
    }
    // Nothing of the forged prompts was queued (a queued turn shows in the transcript at once).
    assert.strictEqual(await turnsOf(), turnsBefore)
    const status = await served.call<{ queued: number }>("flotta_status", { name: "scout" })
    assert.strictEqual(status.queued, 0)
  }, 120_000)
})

describe("the dashboard behind mcp.token", () => {
  let served: Served
  beforeAll(async () => {
    served = await serve("guarded", { agents: [] }, { token: TOKEN })
  }, 120_000)
  afterAll(async () => {
    await served?.stop()
  })

  it("a missing token gets the login form; ?token= and the form set an HttpOnly SameSite=Strict cookie", async () => {
    const { base } = served
    const anonymous = await fetch(`${base}/`, { redirect: "manual" })
    assert.strictEqual(anonymous.status, 401)
    const form = await anonymous.text()
    assert.match(form, /<form[^>]*>/)
    assert.match(form, /name="token"/)
    const wrong = await fetch(`${base}/?token=not-the-token-at-all`, { redirect: "manual" })
    assert.strictEqual(wrong.status, 401)
    assert.strictEqual((await fetch(`${base}/events`)).status, 401)
    assert.strictEqual((await fetch(`${base}/api/charts`)).status, 401)
    const post = await fetch(`${base}/schedule/pause`, {
      method: "POST",
      headers: { Origin: base, Accept: "application/json" },
      redirect: "manual"
    })
    assert.strictEqual(post.status, 401, "a POST with an allowed Origin but no cookie")

    // ?token= once: the cookie, then the dashboard without the token in the address.
    const viaQuery = await browser.newContext({ baseURL: base })
    try {
      const page = await viaQuery.newPage()
      await page.goto(`/?token=${TOKEN}`)
      await page.getByRole("table", { name: "Agents" }).waitFor({ timeout: SLOW })
      assert.notInclude(page.url(), TOKEN)
      const [cookie] = (await viaQuery.cookies()).filter((c) => c.name === "flotta_session")
      assert.isDefined(cookie)
      assert.deepInclude(cookie!, { httpOnly: true, sameSite: "Strict", path: "/" })
      assert.notInclude(
        await page.evaluate(() => (globalThis as unknown as { document: { cookie: string } }).document.cookie),
        "flotta_session",
        "HttpOnly hides it from script"
      )
      // With the cookie, a same-origin POST from the page works.
      const paused = await page.evaluate(async () => {
        const r = await fetch("/schedule/pause", { method: "POST", headers: { Accept: "application/json" } })
        return r.status
      })
      assert.notStrictEqual(paused, 401)
      assert.notStrictEqual(paused, 403)
    } finally {
      await viaQuery.close()
    }

    // The login form.
    const viaForm = await browser.newContext({ baseURL: base })
    try {
      const page = await viaForm.newPage()
      const response = await page.goto("/")
      assert.strictEqual(response?.status(), 401)
      await screenshot(page, "dashboard-login")
      await page.getByLabel("Token").fill(TOKEN)
      await page.getByRole("button", { name: "Sign in" }).click()
      await page.getByRole("table", { name: "Agents" }).waitFor({ timeout: SLOW })
      const cookies = (await viaForm.cookies()).filter((c) => c.name === "flotta_session")
      assert.lengthOf(cookies, 1)
      assert.deepInclude(cookies[0]!, { httpOnly: true, sameSite: "Strict" })
    } finally {
      await viaForm.close()
    }
  }, 180_000)
})
