import "../builder.ts";
