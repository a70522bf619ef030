/** A real webhook receiver on 127.0.0.1 for the tests: it records every request, and can be told to be down. */
import { Effect } from "effect"
import * as http from "node:http"
import type { AddressInfo } from "node:net"

export interface Received {
  readonly headers: http.IncomingHttpHeaders
  readonly body: string
  /** What the receiver answered. */
  readonly status: number
}

export interface Receiver {
  readonly url: string
  readonly received: Array<Received>
  /** The requests it took (answered 2xx). */
  readonly taken: () => Array<Received>
  /** Answer this status from now on (503: down; 200: up). */
  readonly answer: (status: number) => void
}

/** A receiver for the scope's life. */
export const receiver = Effect.acquireRelease(
  Effect.async<{ server: http.Server; receiver: Receiver }>((resume) => {
    const received: Array<Received> = []
    let status = 200
    const server = http.createServer((req, res) => {
      // The answer is the one in force when the request came, as with a real receiver's state.
      const answer = status
      let body = ""
      req.setEncoding("utf8")
      req.on("data", (chunk: string) => (body += chunk))
      req.on("end", () => {
        received.push({ headers: req.headers, body, status: answer })
        res.writeHead(answer, { "content-type": "text/plain" }).end("ok")
      })
    })
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo
      resume(Effect.succeed({
        server,
        receiver: {
          url: `http://127.0.0.1:${port}/hook/secret-path`,
          received,
          taken: () => received.filter((r) => r.status >= 200 && r.status < 300),
          answer: (next) => void (status = next)
        }
      }))
    })
  }),
  ({ server }) =>
    Effect.async<void>((resume) => {
      server.closeAllConnections()
      server.close(() => resume(Effect.void))
    })
).pipe(Effect.map(({ receiver }) => receiver))
