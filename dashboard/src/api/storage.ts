import { authHeaders, reportRefusal } from "./auth-state.ts";
import { type ApiError, apiError, networkError, unexpectedAnswer } from "./errors.ts";

/**
 * The two storage requests that carry bytes, which are REST only (dashboard/README.md): a raw
 * upload (`POST /v1/buckets/{bucket_id}/objects?file_name=…`, the file itself as the body, streamed
 * by the browser from disk and by the server to the store: no base64, no 25 MiB limit) and a
 * download (`GET /v1/objects/{id}/content`). Both go with the session cookie and authHeaders():
 * a plain link could not carry X-CSRF-Token, so a download is fetched and handed to the browser as
 * a Blob.
 */

/** An object as the REST API answers it (the GraphQL File type). */
export interface StoredFile {
  object: "file";
  id: string;
  bucket_id: string;
  file_name: string;
  content_type: string;
  size_bytes: number;
  sha256: string;
  created_at: string;
}

export interface Progress {
  loaded: number;
  total: number;
}

/** The user stopped the transfer. */
export class TransferCancelled extends Error {
  constructor() {
    super("Cancelled.");
    this.name = "TransferCancelled";
  }
}

/** The error body of a REST answer (`{"error": {…}}`) as an ApiError, with the session's side effects. */
function refusal(status: number, text: string, headers: Headers): ApiError {
  let fields: Record<string, unknown> | undefined;
  try {
    const parsed = JSON.parse(text) as { error?: unknown } | null;
    if (parsed && typeof parsed.error === "object" && parsed.error !== null)
      fields = parsed.error as Record<string, unknown>;
  } catch {
    // not JSON: a proxy's page
  }
  if (!fields) return unexpectedAnswer(status);
  const error = apiError(status, fields, new Response(null, { headers }));
  reportRefusal(error);
  return error;
}

function headersOf(xhr: XMLHttpRequest): Headers {
  const headers = new Headers();
  for (const line of xhr
    .getAllResponseHeaders()
    .trim()
    .split(/[\r\n]+/)) {
    const at = line.indexOf(":");
    if (at > 0) headers.append(line.slice(0, at).trim(), line.slice(at + 1).trim());
  }
  return headers;
}

/**
 * Uploads a file as the raw body. XMLHttpRequest rather than fetch: it reports the upload's
 * progress (fetch cannot), and sends a File from disk without reading it into memory. The type
 * goes in `content_type` (the body itself is application/octet-stream, so a JSON file is not
 * taken for a JSON upload); a file the browser gives no type is stored as application/octet-stream.
 */
export function uploadFile(
  bucketId: string,
  file: File,
  options: { onProgress?(progress: Progress): void; signal?: AbortSignal } = {},
): Promise<StoredFile> {
  return new Promise((resolve, reject) => {
    if (options.signal?.aborted) return reject(new TransferCancelled());
    const query = new URLSearchParams({ file_name: file.name });
    if (file.type) query.set("content_type", file.type);
    const xhr = new XMLHttpRequest();
    xhr.open("POST", `/v1/buckets/${encodeURIComponent(bucketId)}/objects?${query}`);
    xhr.withCredentials = true;
    xhr.setRequestHeader("Content-Type", "application/octet-stream");
    xhr.setRequestHeader("Accept", "application/json");
    for (const [name, value] of Object.entries(authHeaders())) xhr.setRequestHeader(name, value);
    xhr.upload.onprogress = (event) =>
      options.onProgress?.({ loaded: event.loaded, total: event.lengthComputable ? event.total : file.size });
    xhr.onload = () => {
      if (xhr.status === 201) {
        try {
          return resolve(JSON.parse(xhr.responseText) as StoredFile);
        } catch {
          return reject(unexpectedAnswer(xhr.status));
        }
      }
      reject(refusal(xhr.status, xhr.responseText, headersOf(xhr)));
    };
    xhr.onerror = () => reject(networkError());
    xhr.onabort = () => reject(new TransferCancelled());
    options.signal?.addEventListener("abort", () => xhr.abort(), { once: true });
    xhr.send(file);
  });
}

/**
 * Downloads an object and offers it to the browser as `fileName` (a Blob behind an object URL,
 * clicked through a temporary `<a download>`). The bytes are held in memory until saved.
 */
export async function downloadFile(
  id: string,
  fileName: string,
  options: { onProgress?(progress: Progress): void; signal?: AbortSignal } = {},
): Promise<void> {
  let response: Response;
  try {
    response = await fetch(`/v1/objects/${encodeURIComponent(id)}/content`, {
      credentials: "same-origin",
      headers: authHeaders(),
      // The bytes' ETag may be cached; a fresh copy is cheap and always right.
      cache: "no-store",
      ...(options.signal && { signal: options.signal }),
    });
  } catch {
    throw options.signal?.aborted ? new TransferCancelled() : networkError();
  }
  if (!response.ok) throw refusal(response.status, await response.text(), response.headers);
  const total = Number(response.headers.get("content-length")) || 0;
  const chunks: Uint8Array<ArrayBuffer>[] = [];
  let loaded = 0;
  if (response.body) {
    const reader = response.body.getReader();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        chunks.push(value as Uint8Array<ArrayBuffer>);
        loaded += value.byteLength;
        options.onProgress?.({ loaded, total: total || loaded });
      }
    } catch {
      throw options.signal?.aborted ? new TransferCancelled() : networkError();
    }
  }
  const blob = new Blob(chunks, { type: response.headers.get("content-type") ?? "application/octet-stream" });
  const url = URL.createObjectURL(blob);
  const link = document.createElement("a");
  link.href = url;
  link.download = fileName;
  link.hidden = true;
  document.body.append(link);
  link.click();
  link.remove();
  // The browser has taken the URL once the click's download started; freed a little later.
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}
