import { APIPromise, type WithResponse } from "./core.js";

/** A list envelope as the API sends it. */
export interface ListEnvelope<Item> {
  object: string;
  data: Item[];
  has_more: boolean;
  next_cursor: string | null;
}

/**
 * One page of a list (`{object: "list", data, has_more, next_cursor}`, newest first). Iterating a
 * page with `for await` walks it and every page after it.
 */
export class Page<Item> implements AsyncIterable<Item> {
  readonly object: "list" = "list";
  readonly data: Item[];
  readonly has_more: boolean;
  readonly next_cursor: string | null;
  readonly #fetch: (cursor: string) => PagePromise<Item>;

  constructor(envelope: ListEnvelope<Item>, fetchPage: (cursor: string) => PagePromise<Item>) {
    this.data = envelope.data;
    this.has_more = envelope.has_more;
    this.next_cursor = envelope.next_cursor;
    this.#fetch = fetchPage;
  }

  /** Whether another page follows. */
  hasNextPage(): boolean {
    return this.has_more && this.next_cursor !== null;
  }

  /** The next page (same filters, `cursor` = this page's `next_cursor`), or null after the last one. */
  nextPage(): Promise<Page<Item> | null> {
    return this.hasNextPage() ? this.#fetch(this.next_cursor as string) : Promise.resolve(null);
  }

  /** This page and every page after it. */
  async *iterPages(): AsyncGenerator<Page<Item>, void, undefined> {
    let page: Page<Item> | null = this;
    while (page) {
      yield page;
      page = await page.nextPage();
    }
  }

  /** Every item of this page and of the pages after it. */
  async *[Symbol.asyncIterator](): AsyncGenerator<Item, void, undefined> {
    for await (const page of this.iterPages()) yield* page.data;
  }

  toJSON(): ListEnvelope<Item> {
    return { object: this.object, data: this.data, has_more: this.has_more, next_cursor: this.next_cursor };
  }
}

/**
 * What a `list` method returns: await it for the first page, or iterate it with `for await` for
 * every item of every page.
 */
export class PagePromise<Item> extends APIPromise<Page<Item>> implements AsyncIterable<Item> {
  constructor(result: Promise<WithResponse<Page<Item>>>) {
    super(result);
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<Item, void, undefined> {
    const page = await this;
    yield* page;
  }
}
