#!/bin/sh
# A non-interactive $EDITOR for the human-gate flow's test: a person lowers the confidence of
# the decision in the file they are given.
sed 's/"confidence": "medium"/"confidence": "low"/' "$1" > "$1.new" && mv "$1.new" "$1"
