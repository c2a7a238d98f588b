import { ID_LENGTH, maxTextLength } from "../../schema/lib/limits.ts";
import type { OpenApiExtension } from "../rest/openapi.ts";

/** The raw form's query parameters are bound as the JSON form's fields of the same names. */
const FILE_NAME_LENGTH = maxTextLength("Mutation.uploadFile", "file_name");
const CONTENT_TYPE_LENGTH = maxTextLength("Mutation.uploadFile", "content_type");

const binary = { schema: { type: "string", format: "binary" } };
const text = (description: string, pattern?: string) => ({
  description,
  required: true,
  schema: { type: "string", ...(pattern && { pattern }) },
});

/**
 * What Sofa cannot describe: the raw form of an upload, and the download route. Both are served by
 * useStorage (server/storage/plugin.ts).
 */
export const storageOpenApi: OpenApiExtension = ({ paths, errors, headers }) => {
  const upload = paths["/buckets/{bucket_id}/objects"]?.post;
  if (!upload) throw new Error("The upload route is missing from the REST view.");
  upload.description +=
    " Two forms: the JSON body below, or the file itself as the body with any Content-Type but JSON (a JSON file: application/octet-stream and `content_type=application/json`), " +
    "streamed to the store up to the quota, which is not subject to the 25 MiB body limit.";
  upload.requestBody.description =
    "JSON with the bytes in base64, or the raw form: the file's bytes as the body (application/octet-stream or any other non-JSON type), " +
    "with `file_name` (and optionally `content_type`) in the query string.";
  upload.requestBody.content["application/octet-stream"] = binary;
  upload.parameters.push(
    {
      name: "file_name",
      in: "query",
      required: false,
      description: `Raw form only, and required there: the file's name (1–${FILE_NAME_LENGTH} characters, no / or \\).`,
      schema: { type: "string", maxLength: FILE_NAME_LENGTH },
    },
    {
      name: "content_type",
      in: "query",
      required: false,
      description: "Raw form only: the MIME type to store instead of the request's Content-Type.",
      schema: { type: "string", maxLength: CONTENT_TYPE_LENGTH },
    },
  );
  const declared = [
    "storage_quota_exceeded",
    "upload_incomplete",
    "concurrency_limit_exceeded",
    "data_quota_exceeded",
  ];
  Object.assign(upload.responses, errors({ method: "POST", hasPathParams: true, declared }));

  const validators = {
    ETag: text("The object's sha256, quoted.", '^"[0-9a-f]{64}"$'),
    "Last-Modified": text("When the object was uploaded."),
    "Cache-Control": text("Revalidate before reuse."),
    "X-Content-Type-Options": {
      description: "Never sniffed.",
      required: true,
      schema: { type: "string", enum: ["nosniff"] },
    },
  };
  const content = {
    ...validators,
    "Content-Length": {
      description: "Bytes in this response.",
      required: true,
      schema: { type: "integer", minimum: 0 },
    },
    "Content-Disposition": text(
      "`attachment` with the file name (RFC 6266: an ASCII `filename` and the exact `filename*`).",
      '^attachment; filename="[^"]*"; filename\\*=UTF-8\'\'',
    ),
    "Accept-Ranges": {
      description: "Single byte ranges are served.",
      required: true,
      schema: { type: "string", enum: ["bytes"] },
    },
    ...headers,
  };
  paths["/objects/{id}/content"] = {
    get: {
      operationId: "fileContent",
      summary: "Download an object's bytes",
      description:
        "The bytes as uploaded, with the object's Content-Type (never sniffed). `If-None-Match` with the ETag answers 304; one `Range` of bytes answers 206 " +
        "(several ranges, or a malformed one, get the whole object). HEAD answers the same headers. Needs storage.read.",
      tags: ["objects"],
      parameters: [
        {
          name: "id",
          in: "path",
          required: true,
          description: "The object's id (`obj_…`).",
          schema: { type: "string", maxLength: ID_LENGTH },
        },
      ],
      responses: {
        200: { description: "The whole object.", headers: content, content: { "*/*": binary } },
        206: {
          description: "The requested range.",
          headers: {
            ...content,
            "Content-Range": text("`bytes first-last/size`.", "^bytes \\d+-\\d+/\\d+$"),
          },
          content: { "*/*": binary },
        },
        304: {
          description: "The object has not changed since the ETag sent in If-None-Match.",
          headers: { ...validators, ...headers },
        },
        ...errors({ method: "GET", hasPathParams: true, declared: ["range_not_satisfiable"] }),
      },
    },
  };
};
