/**
 * @flotta/mcp: the fleet as MCP tools, over Streamable HTTP (one endpoint, both protocol eras) and stdio.
 *
 * - HTTP: `McpServer.layer(section)` (needs `Flotta`): the config's `mcp` section (`McpConfig.fromFile`) or
 *   `{ port, host, token, allowedOrigins }` from code; `Layer.empty` when there is none.
 * - stdio (`flotta mcp`): `Stdio.serve()` in a scope with `Flotta` provided; provide `Stdio.stderrLogger` with
 *   the fleet so that Effect's logs (the fleet's included) go to stderr, never into the protocol on stdout.
 * - In process (tests, embedding): `McpHandler.make(settings)` is the endpoint as `fetch(Request)`.
 */
export * as CostTools from "./CostTools.js"
export * as McpConfig from "./McpConfig.js"
export * as McpHandler from "./McpHandler.js"
export * as McpServer from "./McpServer.js"
export * as Resources from "./Resources.js"
export * as SchedulerTools from "./SchedulerTools.js"
export * as Schemas from "./Schemas.js"
export * as ServerFactory from "./ServerFactory.js"
export * as SessionTools from "./SessionTools.js"
export * as Stdio from "./Stdio.js"
export * as Tool from "./Tool.js"
export * as ToolBridge from "./ToolBridge.js"
export * as Tools from "./Tools.js"
