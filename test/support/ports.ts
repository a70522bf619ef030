/** Free TCP ports on 127.0.0.1 for test servers. */
import * as net from "node:net"

/**
 * A free port below Linux's ephemeral range (32768 and up): a port the kernel hands to some other listener on
 * port 0 (the simulator's, say) can never be the one a test picked and is about to give its own server.
 */
export const freePort = async (): Promise<number> => {
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = 20_000 + Math.floor(Math.random() * 12_000)
    const free = await new Promise<boolean>((resolve) => {
      const server = net.createServer()
      server.once("error", () => resolve(false))
      server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)))
    })
    if (free) return port
  }
  throw new Error("no free port below the ephemeral range after 200 tries")
}
