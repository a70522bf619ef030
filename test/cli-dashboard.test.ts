/**
 * Where `flotta serve` puts the dashboard: at `/` of the MCP server (which keeps `/mcp`), or on a port of its own;
 * the URL is on serve's first line, and a dashboard that cannot start (exposed without a token, a port in use)
 * stops serve with exit code 3 and a message naming the field. A real `flotta serve --simulate` each time.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client"
import * as fs from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { runFlotta } from "./support/cli.js"
import { freePort } from "./support/ports.js"
import { withServe } from "./support/serve.js"

let dir: string
beforeAll(() => {
  dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "flotta-dashboard-cli-")))
})
afterAll(() => {
  fs.rmSync(dir, { recursive: true, force: true })
})

const project = (name: string, config: unknown) => {
  const at = path.join(dir, name)
  fs.mkdirSync(at)
  fs.writeFileSync(path.join(at, "flotta.config.json"), JSON.stringify(config))
  return at
}

/** Runs serve until its first line, hands over that line, then stops it. */
const serving = (cwd: string, use: (line: string) => Promise<void>) =>
  withServe(cwd, {}, ({ out }) => use(out.stderr.split("\n").find((l) => l.startsWith("flotta serve:")) ?? out.stderr))

describe("flotta serve and the dashboard", () => {
  it("shares the MCP server's port: the page at /, MCP still at /mcp", { timeout: 120_000 }, async () => {
    const port = await freePort()
    await serving(project("shared", { agents: [{ name: "scout" }], mcp: { port }, dashboard: {} }), async (line) => {
      assert.include(line, `dashboard at http://127.0.0.1:${port}/`)
      const page = await fetch(`http://127.0.0.1:${port}/`)
      assert.strictEqual(page.status, 200)
      const html = await page.text()
      assert.match(html, /<table aria-label="Agents">/)
      assert.match(html, /<a href="\/agents\/scout">scout<\/a>/)
      const client = new Client({ name: "dashboard-test", version: "0.0.0" })
      await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`)))
      try {
        const listed = await client.callTool({ name: "flotta_list", arguments: {} })
        assert.include(JSON.stringify(listed.structuredContent), "scout")
      } finally {
        await client.close()
      }
    })
  })

  it("on a port of its own, the MCP server serves only /mcp", { timeout: 120_000 }, async () => {
    const [mcpPort, dashboardPort] = [await freePort(), await freePort()]
    const cwd = project("own", { mcp: { port: mcpPort }, dashboard: { port: dashboardPort } })
    await serving(cwd, async (line) => {
      assert.include(line, `dashboard at http://127.0.0.1:${dashboardPort}/`)
      assert.strictEqual((await fetch(`http://127.0.0.1:${dashboardPort}/reports`)).status, 200)
      assert.strictEqual((await fetch(`http://127.0.0.1:${mcpPort}/`)).status, 404)
    })
  })

  it(
    "refuses to start exposed without a token, or on a port in use, naming the field",
    { timeout: 120_000 },
    async () => {
      const exposed = await runFlotta(project("exposed", { dashboard: { host: "0.0.0.0", port: await freePort() } }), [
        "serve",
        "--simulate"
      ])
      assert.strictEqual(exposed.code, 3, exposed.stderr)
      assert.match(exposed.stderr, /dashboard not started: binding to 0\.0\.0\.0 exposes the fleet/)
      assert.match(exposed.stderr, /dashboard\.token/)

      const taken = await freePort()
      const blocker = net.createServer()
      await new Promise<void>((resolve) => blocker.listen(taken, "127.0.0.1", resolve))
      try {
        const busy = await runFlotta(project("busy", { dashboard: { port: taken } }), ["serve", "--simulate"])
        assert.strictEqual(busy.code, 3, busy.stderr)
        assert.match(busy.stderr, new RegExp(`port ${taken} on 127\\.0\\.0\\.1 is already in use.*dashboard\\.port`))
      } finally {
        blocker.close()
      }
    }
  )
})
