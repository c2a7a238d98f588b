import { mkdtemp, readdir, rm } from "node:fs/promises";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { createRequire } from "node:module";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { S3Client } from "@aws-sdk/client-s3";

interface S3rverInstance {
  callback(): (req: IncomingMessage, res: ServerResponse) => void;
  configureBuckets(): Promise<void>;
}
type S3rverClass = new (options: {
  silent: boolean;
  directory: string;
  configureBuckets?: { name: string; configs: string[] }[];
}) => S3rverInstance;
const S3rver = createRequire(import.meta.url)("s3rver") as S3rverClass;

export interface S3TestServer {
  endpoint: string;
  bucket: string;
  client: S3Client;
  /** Ids of multipart uploads begun and neither completed nor aborted. */
  pendingUploads(): Promise<string[]>;
  close(): Promise<void>;
}

/**
 * s3rver on 127.0.0.1:0 in a temp directory. s3rver 3.7 has no AbortMultipartUpload, so this
 * answers that one call itself, doing what S3 does: drop the upload's parts.
 */
export async function startS3Server(bucket = "kontor-test"): Promise<S3TestServer> {
  const directory = await mkdtemp(join(tmpdir(), "kontor-s3-"));
  const s3rver = new S3rver({ silent: true, directory, configureBuckets: [{ name: bucket, configs: [] }] });
  await s3rver.configureBuckets();
  const uploadsDir = join(directory, bucket, "._S3rver_uploads");
  const handle = s3rver.callback();
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    const uploadId = url.searchParams.get("uploadId");
    if (req.method === "DELETE" && uploadId !== null) {
      if (!/^[A-Za-z0-9_-]+$/.test(uploadId)) {
        res.writeHead(400).end();
        return;
      }
      void rm(join(uploadsDir, uploadId), { recursive: true, force: true }).then(
        () => res.writeHead(204).end(),
        () => res.writeHead(500).end(),
      );
      return;
    }
    handle(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const client = new S3Client({
    endpoint,
    region: "us-east-1",
    forcePathStyle: true,
    credentials: { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" },
  });
  return {
    endpoint,
    bucket,
    client,
    pendingUploads: () => readdir(uploadsDir).catch(() => []),
    async close() {
      client.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await rm(directory, { recursive: true, force: true });
    },
  };
}
