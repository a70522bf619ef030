/**
 * A TCP proxy on 127.0.0.1 in front of a local server, for tests of what a client does when its connection dies:
 * `cut()` destroys every live connection and refuses new ones (the listener closes: connection refused),
 * `restore()` listens again on the same port. Each HTTP/1.x request head a client sends through it is recorded,
 * so a test can assert what a reconnect carried (`Last-Event-ID: N`, `?since=N`).
 */
import * as net from "node:net"
import { freePort } from "./ports.js"

/** One request head seen on a client connection. */
export interface RequestHead {
  /** Which client connection it came on (1, 2, ... in accept order). */
  readonly connection: number
  /** `GET /events?since=3 HTTP/1.1` */
  readonly requestLine: string
  readonly method: string
  /** The request target, path and query. */
  readonly target: string
  /** Header lines as sent (`Name: value`). */
  readonly lines: ReadonlyArray<string>
  /** Header values by lower-case name (the last one wins). */
  readonly headers: Readonly<Record<string, string>>
}

export interface TcpProxy {
  readonly port: number
  /** `http://127.0.0.1:<port>` */
  readonly url: string
  /** Every request head seen so far, in order. */
  readonly requests: () => ReadonlyArray<RequestHead>
  /** What the server sent back on a client connection so far (latin1, at most its first MiB). */
  readonly received: (connection: number) => string
  /** How many client connections were accepted so far (the number of the latest one). */
  readonly connections: () => number
  /** Connections open now (client side). */
  readonly liveConnections: () => number
  /** Whether the proxy refuses connections now. */
  readonly isCut: () => boolean
  /** Destroys every live connection and refuses new ones until `restore()`. */
  readonly cut: () => Promise<void>
  /** Accepts connections again, on the same port. */
  readonly restore: () => Promise<void>
  /** Cuts and stops for good. */
  readonly close: () => Promise<void>
}

const HEAD_END = Buffer.from("\r\n\r\n")

/**
 * Reads request heads out of the bytes a client sends: a head, then a body of its Content-Length, then the next
 * head (keep-alive). A chunked request body (browsers send none here) ends the parsing for that connection.
 */
const headParser = (connection: number, record: (head: RequestHead) => void) => {
  let buffer = Buffer.alloc(0)
  let skip = 0
  let gaveUp = false
  return (chunk: Buffer) => {
    if (gaveUp) return
    buffer = Buffer.concat([buffer, chunk])
    while (true) {
      if (skip > 0) {
        const n = Math.min(skip, buffer.length)
        buffer = buffer.subarray(n)
        skip -= n
        if (skip > 0) return
      }
      const end = buffer.indexOf(HEAD_END)
      if (end < 0) {
        if (buffer.length > 64 * 1024) gaveUp = true
        return
      }
      const [requestLine = "", ...lines] = buffer.subarray(0, end).toString("latin1").split("\r\n")
      buffer = buffer.subarray(end + HEAD_END.length)
      const headers: Record<string, string> = {}
      for (const line of lines) {
        const colon = line.indexOf(":")
        if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim()
      }
      const [method = "", target = ""] = requestLine.split(" ")
      record({ connection, requestLine, method, target, lines, headers })
      if (headers["transfer-encoding"] !== undefined) {
        gaveUp = true
        return
      }
      skip = Number(headers["content-length"] ?? "0") || 0
    }
  }
}

/** Starts a proxy from a free port on 127.0.0.1 to `127.0.0.1:targetPort`. */
export const startTcpProxy = async (targetPort: number, targetHost = "127.0.0.1"): Promise<TcpProxy> => {
  const port = await freePort()
  const requests: Array<RequestHead> = []
  const downstream = new Map<number, string>()
  const clients = new Set<net.Socket>()
  const upstreams = new Set<net.Socket>()
  let connections = 0
  let cut = false

  const server = net.createServer((client) => {
    if (cut) {
      client.destroy()
      return
    }
    const connection = ++connections
    const upstream = net.connect(targetPort, targetHost)
    clients.add(client)
    upstreams.add(upstream)
    const parse = headParser(connection, (head) => requests.push(head))
    client.on("data", (chunk: Buffer) => {
      parse(chunk)
      upstream.write(chunk)
    })
    upstream.on("data", (chunk: Buffer) => {
      const sofar = downstream.get(connection) ?? ""
      if (sofar.length < 1024 * 1024) downstream.set(connection, sofar + chunk.toString("latin1"))
      client.write(chunk)
    })
    client.on("end", () => upstream.end())
    upstream.on("end", () => client.end())
    const gone = () => {
      client.destroy()
      upstream.destroy()
      clients.delete(client)
      upstreams.delete(upstream)
    }
    client.on("close", gone)
    upstream.on("close", gone)
    client.on("error", gone)
    upstream.on("error", gone)
  })

  const listen = () =>
    new Promise<void>((resolve, reject) => {
      server.once("error", reject)
      server.listen(port, "127.0.0.1", () => {
        server.off("error", reject)
        resolve()
      })
    })
  await listen()

  const doCut = async () => {
    if (cut) return
    cut = true
    const closed = new Promise<void>((resolve) => server.close(() => resolve()))
    // A reset, not a polite FIN: the client sees its connection die as when a server or network goes away.
    for (const socket of [...clients, ...upstreams]) {
      try {
        socket.resetAndDestroy()
      } catch {
        socket.destroy()
      }
    }
    clients.clear()
    upstreams.clear()
    await closed
  }

  return {
    port,
    url: `http://127.0.0.1:${port}`,
    requests: () => [...requests],
    received: (connection) => downstream.get(connection) ?? "",
    connections: () => connections,
    liveConnections: () => clients.size,
    isCut: () => cut,
    cut: doCut,
    restore: async () => {
      if (!cut) return
      cut = false
      await listen()
    },
    close: doCut
  }
}
