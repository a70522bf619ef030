/**
 * The fleet's records as MCP resources: each live agent's transcript and report entries, the fleet-wide
 * report log (the most recent entries; `flotta_reports` pages through all of them by cursor), and the approvals
 * waiting for a human.
 */
import { StoreUnavailable } from "@flotta/core/Errors"
import { Flotta } from "@flotta/core/Flotta"
import type { McpServer as SdkServer, ReadResourceResult } from "@modelcontextprotocol/server"
import { ResourceNotFoundError, ResourceTemplate } from "@modelcontextprotocol/server"
import { Cause, Effect, Exit, Runtime } from "effect"

/** Entries a report resource shows: the most recent ones. */
export const REPORT_TAIL = 500

const JSON_TYPE = "application/json"

/** The last `REPORT_TAIL` entries (oldest first) and the cursor after the newest entry in the log. */
const reportTail = (fleet: Flotta, agent?: string) =>
  fleet.reports({ last: REPORT_TAIL, ...(agent === undefined ? {} : { agent }) })

const json = (uri: URL, value: unknown): ReadResourceResult => ({
  contents: [{ uri: uri.href, mimeType: JSON_TYPE, text: JSON.stringify(value) }]
})

const variable = (value: string | ReadonlyArray<string> | undefined) =>
  decodeURIComponent(Array.isArray(value) ? (value[0] ?? "") : (value as string | undefined) ?? "")

export const register = (server: SdkServer, runtime: Runtime.Runtime<Flotta>) => {
  const runExit = Runtime.runPromiseExit(runtime)
  /** The SDK answers a thrown `ResourceNotFoundError` with the era's "resource not found" error. */
  // Any other failure (a store or host that cannot answer) is thrown as it is: the SDK reports it.
  const run = <A, E>(effect: Effect.Effect<A, E, Flotta>): Promise<A> =>
    runExit(effect).then((exit) => {
      if (Exit.isSuccess(exit)) return exit.value
      throw exit.cause._tag === "Fail" ? exit.cause.error : Cause.squash(exit.cause)
    })
  const liveAgents = (suffix: string, what: string) => () =>
    run(Effect.flatMap(Flotta, (fleet) => fleet.list())).then((agents) => ({
      resources: agents.map((agent) => ({
        uri: `flotta://agents/${encodeURIComponent(agent.name)}/${suffix}`,
        name: `${agent.name} ${what}`,
        mimeType: JSON_TYPE
      }))
    }))
  const forAgent = <A>(uri: URL, name: string, read: (fleet: Flotta) => Effect.Effect<A, { _tag: string }>) =>
    run(
      Effect.flatMap(Flotta, read).pipe(
        Effect.map((value) => json(uri, value)),
        Effect.mapError((error) =>
          error instanceof StoreUnavailable ? error : new ResourceNotFoundError(uri.href, `no agent named "${name}"`)
        )
      )
    )

  server.registerResource("reports", "flotta://reports", {
    title: "Report log",
    description: `The fleet's activity log: the last ${REPORT_TAIL} entries and the cursor after them`,
    mimeType: JSON_TYPE
  }, (uri) => run(Effect.map(Effect.flatMap(Flotta, (fleet) => reportTail(fleet)), (page) => json(uri, page))))

  server.registerResource(
    "approvals",
    "flotta://approvals",
    {
      title: "Pending approvals",
      description: "The tool calls waiting for a human's decision (flotta_decide), oldest first",
      mimeType: JSON_TYPE
    },
    (uri) =>
      run(Effect.map(Effect.flatMap(Flotta, (fleet) => fleet.approvals()), (approvals) => json(uri, { approvals })))
  )

  server.registerResource(
    "transcript",
    new ResourceTemplate("flotta://agents/{name}/transcript", { list: liveAgents("transcript", "transcript") }),
    { title: "Agent transcript", description: "An agent's turns, oldest first", mimeType: JSON_TYPE },
    (uri, variables) => {
      const name = variable(variables.name)
      return forAgent(uri, name, (fleet) => Effect.map(fleet.transcript(name), (turns) => ({ name, turns })))
    }
  )

  server.registerResource(
    "agent-reports",
    new ResourceTemplate("flotta://agents/{name}/reports", { list: liveAgents("reports", "reports") }),
    {
      title: "Agent report log",
      description: `One agent's report entries: the last ${REPORT_TAIL}`,
      mimeType: JSON_TYPE
    },
    (uri, variables) => {
      const name = variable(variables.name)
      return forAgent(uri, name, (fleet) =>
        // Entries outlive the agent, so a closed one still has them; an unknown name has none.
        Effect.flatMap(reportTail(fleet, name), (page) =>
          page.entries.length === 0
            ? Effect.fail({ _tag: "AgentNotFound" })
            : Effect.succeed({ name, ...page })))
    }
  )
}
