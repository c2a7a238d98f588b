import { join } from "node:path";
import type { StorageConfig } from "../runtime/config.ts";
import type { ByteStore } from "./byte-store.ts";
import { LocalByteStore } from "./local-store.ts";

/**
 * S3 when STORAGE_S3_BUCKET is set, else the local disk under `${dataDir}/objects`. The AWS SDK is
 * imported only for S3: its modules are megabytes of heap a process without S3 would hold for nothing
 * (docs/performance.md#memory).
 */
export async function openByteStore(storage: StorageConfig, dataDir: string): Promise<ByteStore> {
  if (!storage.s3) return new LocalByteStore(join(dataDir, "objects"));
  const { openS3ByteStore } = await import("./s3-store.ts");
  return openS3ByteStore(storage.s3);
}
