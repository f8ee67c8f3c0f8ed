// A webhook receiver as docs/webhooks.md shows it, verifying contactd's signature with the Standard
// Webhooks library. internal/consumer runs it against real deliveries: it prints
// `listening <port>`, reads the subscription's secret from the first line of stdin, then for
// each delivery prints one JSON line with what it verified, and answers 204 (or 400 when the
// signature does not verify).
import http from "node:http";
import readline from "node:readline";
import { Webhook } from "standardwebhooks";

const lines = readline.createInterface({ input: process.stdin });
const webhook = new Promise((resolve) => lines.once("line", (l) => resolve(new Webhook(l.trim()))));

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", async () => {
    const wh = await webhook;
    const body = Buffer.concat(chunks).toString("utf8"); // verify the raw body, not re-encoded JSON
    let report;
    try {
      const payload = wh.verify(body, req.headers);
      let tamperedRejected = false;
      try {
        wh.verify(body.replace("}", " }"), req.headers);
      } catch {
        tamperedRejected = true;
      }
      report = { verified: true, webhookId: req.headers["webhook-id"], tamperedRejected, events: payload.events };
      res.writeHead(204).end();
    } catch (err) {
      report = { verified: false, error: String(err) };
      res.writeHead(400).end();
    }
    console.log(JSON.stringify(report));
  });
});
server.listen(0, "127.0.0.1", () => console.log(`listening ${server.address().port}`));
