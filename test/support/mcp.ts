/**
 * Support for the end-to-end MCP tests (`test/mcp-*.test.ts`): the MCP unit ring's client helpers, and the core
 * tests' fake-CLI fleet and process helpers for the tests that run real processes. Waiting here is on the real
 * clock (`until` polls): the server and its agents are child processes, beyond any TestClock.
 */
export { fakeFleet, isAlive, tempDir, waitGone } from "../../packages/core/test/support.js"
export { call, connect, ERAS, fleet, handler, structured, text } from "../../packages/mcp/test/support.js"
export type { Era } from "../../packages/mcp/test/support.js"
export { waitFor as until } from "./waiting.js"
