import { useEffect, useState } from "react";
import { usePaged } from "../../api/paged.ts";
import { downloadFile, type Progress } from "../../api/storage.ts";
import { DeleteFileDocument, StorageFilesDocument } from "../../generated/graphql.ts";
import { Button } from "../../ui/Button.tsx";
import { ConfirmDialog } from "../../ui/ConfirmDialog.tsx";
import { ErrorBanner } from "../../ui/ErrorBanner.tsx";
import { TextField } from "../../ui/Field.tsx";
import { Actions } from "../../ui/Form.tsx";
import { formatBytes, formatDateTime } from "../../ui/format.ts";
import { Loading, Panel } from "../../ui/Page.tsx";
import { Table } from "../../ui/Table.tsx";
import type { Bucket, StoredFile } from "./storage-shared.ts";
import { UploadForm } from "./UploadForm.tsx";

/** The chosen bucket's files: upload, search, a page at a time, download and delete. */
export function FilesPanel({
  bucket,
  free,
  limitLabel,
  canWrite,
  onChanged,
}: {
  bucket: Bucket;
  free: number | undefined;
  limitLabel: string | undefined;
  canWrite: boolean;
  onChanged(message?: string): void;
}) {
  const [search, setSearch] = useState("");
  const [applied, setApplied] = useState("");
  const list = usePaged(
    StorageFilesDocument,
    { bucket_id: bucket.id, search: applied || null },
    (data) => data.files,
  );
  const [deleting, setDeleting] = useState<StoredFile | null>(null);
  const [downloading, setDownloading] = useState<{ id: string; progress: Progress | null } | null>(null);
  const [downloadError, setDownloadError] = useState<unknown>(undefined);

  // The search applies once typing pauses.
  useEffect(() => {
    if (search.trim() === applied) return;
    const timer = setTimeout(() => setApplied(search.trim()), 300);
    return () => clearTimeout(timer);
  }, [search, applied]);

  const files = list.rows;
  const restart = list.restart;

  const download = async (file: StoredFile) => {
    if (downloading) return;
    setDownloadError(undefined);
    setDownloading({ id: file.id, progress: null });
    try {
      await downloadFile(file.id, file.file_name, {
        onProgress: (progress) => setDownloading({ id: file.id, progress }),
      });
    } catch (error) {
      setDownloadError(error);
    } finally {
      setDownloading(null);
    }
  };

  return (
    <Panel title={`Files in ${bucket.name}`}>
      <UploadForm
        bucket={bucket}
        free={free}
        limitLabel={limitLabel}
        disabled={!canWrite}
        onUploaded={() => {
          restart();
          onChanged();
        }}
      />
      <TextField
        label="Search file names"
        type="search"
        className="storage-search"
        value={search}
        onChange={(event) => setSearch(event.target.value)}
        hint="Part of a name, in any case."
      />
      <ErrorBanner error={list.error} />
      <ErrorBanner error={downloadError} title="The download failed:" />
      {list.loading && files.length === 0 && <Loading />}
      {(!list.loading || files.length > 0) && (
        <Table
          caption={`Files in ${bucket.name}`}
          rows={files}
          rowKey={(file) => file.id}
          empty={
            applied
              ? `No file name contains “${applied}”.`
              : canWrite
                ? "No files yet. Upload some above."
                : "No files yet."
          }
          columns={[
            { header: "Name", cell: (file) => <span className="storage-file-name">{file.file_name}</span> },
            { header: "Type", cell: (file) => <code>{file.content_type}</code> },
            { header: "Size", cell: (file) => formatBytes(file.size_bytes), nowrap: true },
            { header: "Uploaded", cell: (file) => formatDateTime(file.created_at), nowrap: true },
            {
              header: "Actions",
              cell: (file) => {
                const mine = downloading?.id === file.id;
                const percent =
                  mine && downloading.progress?.total
                    ? Math.floor((downloading.progress.loaded / downloading.progress.total) * 100)
                    : null;
                return (
                  <div className="row-actions">
                    <Button
                      busy={mine}
                      onClick={() => void download(file)}
                      aria-label={`Download ${file.file_name}`}
                    >
                      {mine ? `Downloading${percent === null ? "…" : ` ${percent} %`}` : "Download"}
                    </Button>
                    <Button
                      variant="danger"
                      disabled={!canWrite}
                      onClick={() => setDeleting(file)}
                      aria-label={`Delete ${file.file_name}`}
                    >
                      Delete
                    </Button>
                  </div>
                );
              },
            },
          ]}
        />
      )}
      {list.hasMore && (
        <Actions>
          <Button busy={list.loading} onClick={list.more}>
            Show more files
          </Button>
        </Actions>
      )}
      <ConfirmDialog
        subject={deleting}
        title={`Delete ${deleting?.file_name ?? "file"}?`}
        label="Delete file"
        confirm="Delete file"
        mutation={DeleteFileDocument}
        variables={(file) => ({ id: file.id })}
        onClose={() => setDeleting(null)}
        onDone={(_, file) => {
          setDeleting(null);
          restart();
          onChanged(`${file.file_name} deleted: ${formatBytes(file.size_bytes)} freed.`);
        }}
      >
        <p>
          Its bytes are deleted at once{deleting ? `, freeing ${formatBytes(deleting.size_bytes)}` : ""}. This
          cannot be undone.
        </p>
      </ConfirmDialog>
    </Panel>
  );
}
