import { type DragEvent, useEffect, useId, useRef, useState } from "react";
import { ApiError } from "../../api/errors.ts";
import { graphql } from "../../api/graphql.ts";
import { type Progress, TransferCancelled, uploadFile } from "../../api/storage.ts";
import { StorageUsageDocument } from "../../generated/graphql.ts";
import { Button } from "../../ui/Button.tsx";
import { ErrorBanner, Notice } from "../../ui/ErrorBanner.tsx";
import { Form } from "../../ui/Form.tsx";
import { formatBytes } from "../../ui/format.ts";
import type { Bucket } from "./storage-shared.ts";

/** Where an upload is: which file of how many, and its bytes sent. */
interface UploadProgress extends Progress {
  name: string;
  index: number;
  count: number;
}

/** What became of each file of an upload. */
interface UploadOutcome {
  name: string;
  error?: unknown;
}

/** The bytes the workspace may still store, asked now; undefined when that failed (the server decides). */
async function spaceLeft(): Promise<number | undefined> {
  try {
    const { storageUsage } = await graphql(StorageUsageDocument);
    return Math.max(0, storageUsage.limit_bytes - storageUsage.used_bytes);
  } catch {
    return undefined;
  }
}

/** A file the quota has no room for, refused before it is sent (with the code the API would answer). */
function tooBig(file: File, left: number, limitLabel: string | undefined): ApiError {
  return new ApiError(
    403,
    "permission_error",
    "storage_quota_exceeded",
    `It is ${formatBytes(file.size)}, and only ${formatBytes(left)} of the workspace's ${limitLabel ? `${limitLabel} ` : ""}storage quota is left: nothing was sent. ` +
      "Delete files or move to a larger plan.",
  );
}

/** Uploads the files chosen or dropped, one after another, with progress; refuses what would not fit first. */
export function UploadForm({
  bucket,
  free,
  limitLabel,
  disabled,
  onUploaded,
}: {
  bucket: Bucket;
  free: number | undefined;
  limitLabel: string | undefined;
  disabled: boolean;
  onUploaded(): void;
}) {
  const inputId = useId();
  const input = useRef<HTMLInputElement>(null);
  const [chosen, setChosen] = useState<File[]>([]);
  const [progress, setProgress] = useState<UploadProgress | null>(null);
  const [outcomes, setOutcomes] = useState<UploadOutcome[]>([]);
  const [dragging, setDragging] = useState(false);
  const abort = useRef<AbortController | null>(null);
  const uploading = progress !== null;
  const total = chosen.reduce((sum, file) => sum + file.size, 0);

  // Leaving the screen (or the bucket) stops an upload under way: the server keeps nothing of it.
  useEffect(() => () => abort.current?.abort(), []);
  // Closing or reloading the tab meanwhile asks first.
  useEffect(() => {
    if (!uploading) return;
    const ask = (event: BeforeUnloadEvent) => event.preventDefault();
    window.addEventListener("beforeunload", ask);
    return () => window.removeEventListener("beforeunload", ask);
  }, [uploading]);

  const choose = (files: FileList | null) => {
    setChosen(files ? [...files] : []);
    setOutcomes([]);
  };

  const submit = async () => {
    if (uploading || chosen.length === 0) return;
    const files = chosen;
    const controller = new AbortController();
    abort.current = controller;
    const results: UploadOutcome[] = [];
    setOutcomes([]);
    setProgress({ name: files[0]!.name, index: 0, count: files.length, loaded: 0, total: files[0]!.size });
    // A browser sends the whole body before it reads the answer, so a file past the quota would be
    // sent in full only to be refused: what does not fit is refused here, before a byte is sent.
    // The space left shown may be stale: it is asked afresh when something seems not to fit.
    let left = free;
    if (left === undefined || total > left) left = await spaceLeft();
    for (const [index, file] of files.entries()) {
      if (controller.signal.aborted) break;
      if (left !== undefined && file.size > left) {
        results.push({ name: file.name, error: tooBig(file, left, limitLabel) });
        continue;
      }
      setProgress({ name: file.name, index, count: files.length, loaded: 0, total: file.size });
      try {
        await uploadFile(bucket.id, file, {
          signal: controller.signal,
          onProgress: (sent) => setProgress({ name: file.name, index, count: files.length, ...sent }),
        });
        results.push({ name: file.name });
        if (left !== undefined) left -= file.size;
        onUploaded();
      } catch (error) {
        if (error instanceof TransferCancelled) {
          results.push({ name: file.name, error: new Error("Cancelled: nothing of it was stored.") });
          break;
        }
        results.push({ name: file.name, error });
        // The server knows better: the usage shown was stale (another upload, another person).
        if (error instanceof ApiError && error.code === "storage_quota_exceeded") left = await spaceLeft();
      }
    }
    abort.current = null;
    setProgress(null);
    setOutcomes(results);
    // A refusal may come from a usage shown stale: show it as it is now.
    if (results.some((outcome) => outcome.error !== undefined)) onUploaded();
    setChosen([]);
    if (input.current) input.current.value = "";
  };

  const drop = (event: DragEvent<HTMLFormElement>) => {
    event.preventDefault();
    setDragging(false);
    if (disabled || uploading || event.dataTransfer.files.length === 0) return;
    if (input.current) input.current.files = event.dataTransfer.files;
    choose(event.dataTransfer.files);
  };

  const uploaded = outcomes.filter((outcome) => outcome.error === undefined);
  const failed = outcomes.filter((outcome) => outcome.error !== undefined);
  const percent = progress && progress.total > 0 ? Math.floor((progress.loaded / progress.total) * 100) : 0;

  return (
    <Form
      onSubmit={submit}
      aria-label={`Upload files to ${bucket.name}`}
      className={["storage-upload", dragging ? "storage-upload-over" : ""].filter(Boolean).join(" ")}
      onDragOver={(event) => {
        if (disabled) return;
        event.preventDefault();
        setDragging(true);
      }}
      onDragLeave={() => setDragging(false)}
      onDrop={drop}
    >
      <div className="field">
        <label htmlFor={inputId}>Files to upload</label>
        <input
          id={inputId}
          ref={input}
          type="file"
          multiple
          disabled={disabled || uploading}
          aria-describedby={`${inputId}-hint`}
          onChange={(event) => choose(event.target.files)}
        />
        <p className="field-hint" id={`${inputId}-hint`}>
          {disabled
            ? "Your role cannot upload files."
            : `Choose one or more files, or drop them here. Each is sent as it is, up to the space left${free === undefined ? "" : ` (${formatBytes(free)})`}.`}
        </p>
      </div>
      <div className="storage-upload-actions">
        <Button type="submit" variant="primary" busy={uploading} disabled={disabled || chosen.length === 0}>
          {chosen.length > 1 ? `Upload ${chosen.length} files` : "Upload"}
        </Button>
        {uploading && <Button onClick={() => abort.current?.abort()}>Cancel upload</Button>}
        {chosen.length > 0 && !uploading && (
          <span className="muted" data-testid="storage-chosen">
            {chosen.length === 1 ? chosen[0]!.name : `${chosen.length} files`}, {formatBytes(total)}
          </span>
        )}
      </div>
      {progress && (
        <div className="storage-progress">
          <label htmlFor={`${inputId}-progress`}>
            Uploading {progress.name}
            {progress.count > 1 && ` (${progress.index + 1} of ${progress.count})`}
          </label>
          <progress
            id={`${inputId}-progress`}
            max={100}
            value={percent}
            aria-valuetext={`${percent} %, ${formatBytes(progress.loaded)} of ${formatBytes(progress.total)}`}
          />
          <span className="muted" aria-hidden="true">
            {percent} % · {formatBytes(progress.loaded)} of {formatBytes(progress.total)}
          </span>
        </div>
      )}
      {uploaded.length > 0 && (
        <Notice>
          {uploaded.length === 1 ? `${uploaded[0]!.name} uploaded.` : `${uploaded.length} files uploaded.`}
        </Notice>
      )}
      {failed.map((outcome, index) => (
        <ErrorBanner
          // biome-ignore lint/suspicious/noArrayIndexKey: two failed files may share a name; the list is never reordered.
          key={`${index}-${outcome.name}`}
          error={outcome.error}
          title={`${outcome.name} was not uploaded:`}
        />
      ))}
    </Form>
  );
}
