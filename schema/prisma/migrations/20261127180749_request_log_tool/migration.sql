-- AlterTable
ALTER TABLE "request_logs" ADD COLUMN     "tool" TEXT;
